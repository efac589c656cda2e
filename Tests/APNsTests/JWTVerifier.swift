import COpenSSL
import Foundation

@testable import APNs

/// Checks a provider token independently of the signing code: splits the JWT, decodes its
/// header and claims, and verifies the `r || s` signature with the public key through libcrypto
/// (`EVP_DigestVerify` over the DER form OpenSSL expects).
struct JWTVerifier {
    struct Decoded {
        var header: [String: Any]
        var claims: [String: Any]
        var signature: [UInt8]
    }

    let publicKeyFile: String

    /// The token's parts, or nil when it is not three unpadded base64url parts of JSON.
    func decode(_ jwt: String) -> Decoded? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !jwt.contains("="),
            let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let h = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
            let c = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any]
        else { return nil }
        return Decoded(header: h, claims: c, signature: signature)
    }

    /// Whether the signature of `jwt` verifies with the public key.
    func verifies(_ jwt: String) -> Bool {
        guard let decoded = decode(jwt), decoded.signature.count == 64,
            let pem = FileManager.default.contents(atPath: publicKeyFile)
        else { return false }
        let signingInput = Array(jwt[..<jwt.lastIndex(of: ".")!].utf8)
        let key: OpaquePointer? = Array(pem).withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else { return false }
        defer { EVP_PKEY_free(key) }
        // r || s → DER ECDSA-Sig-Value.
        guard let sig = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(sig) }
        let r = BN_bin2bn(decoded.signature, 32, nil)
        let s = Array(decoded.signature[32...]).withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else { return false }
        var derPointer: UnsafeMutablePointer<UInt8>? = nil
        let derLength = i2d_ECDSA_SIG(sig, &derPointer)
        guard derLength > 0, let derPointer else { return false }
        defer { CRYPTO_free(derPointer, #file, #line) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, derPointer, Int(derLength), signingInput, signingInput.count) == 1
    }
}
