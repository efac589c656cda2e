import COpenSSL
import Foundation

/// Why a signing key could not be loaded or used: the step and OpenSSL's own text.
struct ES256KeyError: Error, CustomStringConvertible {
    /// What was being done, e.g. `PEM_read_bio_PrivateKey`.
    var operation: String
    /// OpenSSL's error queue, or our own words.
    var detail: String
    var description: String { "\(operation): \(detail)" }

    /// An error for `operation` carrying (and clearing) OpenSSL's error queue.
    static func openSSL(_ operation: String) -> ES256KeyError {
        var texts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            texts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return ES256KeyError(operation: operation, detail: texts.isEmpty ? "failed" : texts.joined(separator: "; "))
    }
}

/// An EC P-256 private key that signs with ECDSA over SHA-256 (JWS `ES256`, RFC 7518 §3.4).
///
/// Owns its `EVP_PKEY` and frees it in `deinit`; not `Sendable`: ``ProviderTokenCache`` holds it
/// and signs only under its lock.
final class ES256Key {
    private let key: OpaquePointer

    /// Loads a PEM private key (the `.p8` file: PKCS#8 `-----BEGIN PRIVATE KEY-----`).
    /// - Throws: ``ES256KeyError`` when the file cannot be read, is not PEM, or is not a P-256
    ///   EC key.
    convenience init(pemFile path: String) throws(ES256KeyError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ES256KeyError(operation: "read", detail: "cannot read the file")
        }
        try self.init(pem: Array(data))
    }

    /// Loads a PEM private key from its bytes.
    /// - Throws: ``ES256KeyError`` as `init(pemFile:)`.
    init(pem: [UInt8]) throws(ES256KeyError) {
        ERR_clear_error()
        let loaded: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else { throw ES256KeyError.openSSL("PEM_read_bio_PrivateKey") }
        guard EVP_PKEY_get_base_id(loaded) == EVP_PKEY_EC else {
            EVP_PKEY_free(loaded)
            throw ES256KeyError(operation: "key type", detail: "not an EC key (APNs keys are EC P-256)")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(loaded, &name, name.count, &length) == 1,
            String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else {
            EVP_PKEY_free(loaded)
            throw ES256KeyError(operation: "key curve", detail: "not P-256 (prime256v1)")
        }
        key = loaded
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs `message` with ECDSA P-256 over SHA-256.
    /// - Returns: the 64-byte JWS form, `r || s`, each 32 bytes big-endian (RFC 7518 §3.4), not
    ///   the DER `ECDSA-Sig-Value` OpenSSL produces.
    /// - Throws: ``ES256KeyError`` when OpenSSL fails.
    func sign(_ message: [UInt8]) throws(ES256KeyError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw ES256KeyError.openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw ES256KeyError.openSSL("EVP_DigestSignInit")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw ES256KeyError.openSSL("EVP_DigestSign")
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else {
            throw ES256KeyError.openSSL("EVP_DigestSign")
        }
        return try Self.rawSignature(fromDER: Array(der.prefix(length)))
    }

    /// Converts a DER `ECDSA-Sig-Value` (SEQUENCE of the INTEGERs r and s) to `r || s`, 32
    /// bytes each, left-padded with zeros.
    /// - Throws: ``ES256KeyError`` when `der` is not such a signature.
    static func rawSignature(fromDER der: [UInt8]) throws(ES256KeyError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw ES256KeyError.openSSL("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(parsed) }
        var raw = [UInt8](repeating: 0, count: 64)
        let ok = raw.withUnsafeMutableBufferPointer { out in
            BN_bn2binpad(ECDSA_SIG_get0_r(parsed), out.baseAddress, 32) == 32
                && BN_bn2binpad(ECDSA_SIG_get0_s(parsed), out.baseAddress! + 32, 32) == 32
        }
        guard ok else { throw ES256KeyError(operation: "BN_bn2binpad", detail: "r or s longer than 32 bytes") }
        return raw
    }
}
