#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
/* OpenSSL's libcrypto (Debian's libssl-dev): the ES256 signature of the APNs provider token. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#endif
