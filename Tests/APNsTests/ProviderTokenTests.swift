import Foundation
import Harness
import Support
import TestSupport
import Testing

@testable import APNs

@Suite struct ProviderTokenTests {
    let directory: String
    let key: ES256Key
    let verifier: JWTVerifier

    init() throws {
        directory = makeTemporaryDirectory("apns-token")
        try APNsStandIn.makeCredentials(in: directory)
        key = try ES256Key(pemFile: "\(directory)/apns-key.p8")
        verifier = JWTVerifier(publicKeyFile: "\(directory)/apns-key.pub")
    }

    @Test func tokenHasAppleShapeAndVerifiesWithLibcrypto() throws {
        let token = try ProviderToken.make(key: key, keyID: "KEY1234567", teamID: "TEAM123456", issuedAt: 1_700_000_000)
        let decoded = try #require(verifier.decode(token.jwt))
        #expect(decoded.header.count == 2)
        #expect(decoded.header["alg"] as? String == "ES256")
        #expect(decoded.header["kid"] as? String == "KEY1234567")
        #expect(decoded.claims.count == 2)
        #expect(decoded.claims["iss"] as? String == "TEAM123456")
        #expect((decoded.claims["iat"] as? NSNumber)?.int64Value == 1_700_000_000)
        #expect(decoded.signature.count == 64)
        #expect(verifier.verifies(token.jwt))
        // A changed claim no longer verifies.
        let parts = token.jwt.split(separator: ".")
        let forged = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":1700000001}"#.utf8))
        #expect(!verifier.verifies("\(parts[0]).\(forged).\(parts[2])"))
    }

    @Test func derSignaturesBecomeFixedWidthRawForm() throws {
        // r needs a leading 0x00 in DER (high bit set), s is short (31 bytes): r || s is 64 bytes,
        // s left-padded with a zero.
        let r = [UInt8](repeating: 0xff, count: 32)
        let s = [UInt8](repeating: 0x11, count: 31)
        let der: [UInt8] = [0x30, 2 + 33 + 2 + 31, 0x02, 33, 0x00] + r + [0x02, 31] + s
        #expect(try ES256Key.rawSignature(fromDER: der) == r + [0] + s)
        #expect(throws: ES256KeyError.self) { try ES256Key.rawSignature(fromDER: [0x30, 0x00]) }
    }

    @Test func keysThatAreNotP256AreRefused() throws {
        #expect(throws: ES256KeyError.self) { try ES256Key(pemFile: "\(directory)/missing.p8") }
        #expect(throws: ES256KeyError.self) { try ES256Key(pem: Array("not a key".utf8)) }
        // The server key is P-256 too; an RSA key is not EC.
        let rsa = "\(directory)/rsa.pem"
        let made = try ChildProcess.output(
            "/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", rsa])
        #expect(made.termination == .exited(0))
        #expect(throws: ES256KeyError.self) { try ES256Key(pemFile: rsa) }
    }

    @Test func tokenIsReusedThenRenewedAfterFortyMinutes() throws {
        let now = Locked<Int64>(1_700_000_000)
        let cache = ProviderTokenCache(key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: { now.get() })
        let first = try cache.current()
        #expect(first.issuedAt == 1_700_000_000)
        now.set(1_700_000_000 + 40 * 60 - 1)
        #expect(try cache.current() == first)
        #expect(cache.tokensMade == 1)
        now.set(1_700_000_000 + 40 * 60)
        let second = try cache.current()
        #expect(second != first)
        #expect(second.issuedAt == 1_700_000_000 + 40 * 60)
        #expect(cache.tokensMade == 2)
        #expect(verifier.verifies(second.jwt))
    }

    @Test func aRejectedTokenIsReplacedOnceHoweverManyRequestsReportIt() throws {
        let cache = ProviderTokenCache(key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: { 1_700_000_000 })
        let rejected = try cache.current()
        let replacement = try cache.replace(rejected.jwt)
        #expect(replacement != rejected)
        // Other requests that were in flight with the rejected token get the same replacement.
        #expect(try cache.replace(rejected.jwt) == replacement)
        #expect(try cache.current() == replacement)
        #expect(cache.tokensMade == 2)
    }
}
