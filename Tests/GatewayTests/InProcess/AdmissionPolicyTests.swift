import Testing

@testable import Gateway

/// The admission policy alone, without a server: the decision on a request's body from its head
/// (413 before 401, credentials before any budget), the answers it gives, and the upload rate.
@Suite struct AdmissionPolicyTests {
    let policy = AdmissionPolicy(maxBodyBytes: 10, minUploadBytesPerSecond: 100, uploadRateWindowMs: 30_000)
    let bearer: [(name: String, value: String)] = [("host", "x"), ("authorization", "Bearer t")]

    @Test func aBodyWithinTheDefaultLimitIsAdmittedWithoutCredentials() {
        #expect(policy.decide(bodyLimit: 10, declaredLength: 10, headers: []) == .admit)
        #expect(policy.decide(bodyLimit: 10, declaredLength: nil, headers: []) == .admit)
        #expect(policy.decide(bodyLimit: 5, declaredLength: 0, headers: []) == .admit)
    }

    @Test func aDeclaredLengthOverTheRoutesLimitIs413EvenBeforeTheCredentials() {
        #expect(policy.decide(bodyLimit: 10, declaredLength: 11, headers: bearer) == .refuse(.tooLarge(limit: 10)))
        #expect(policy.decide(bodyLimit: 1_000, declaredLength: 1_001, headers: []) == .refuse(.tooLarge(limit: 1_000)))
        #expect(policy.decide(bodyLimit: 1_000, declaredLength: UInt64.max, headers: bearer) == .refuse(.tooLarge(limit: 1_000)))
    }

    @Test func anUploadNeedsBearerCredentials() {
        for value in [nil, "", "Bearer ", "Bearer  \t ", "Basic dTpw", "Bearertoken", "Token t"] {
            let headers: [(name: String, value: String)] = value.map { [("authorization", $0)] } ?? []
            #expect(
                policy.decide(bodyLimit: 1_000, declaredLength: 50, headers: headers) == .refuse(.bearerTokenRequired),
                "\(value ?? "no Authorization") was let in")
        }
        let lowerCase: [(name: String, value: String)] = [("authorization", "bearer t")]
        #expect(policy.decide(bodyLimit: 1_000, declaredLength: 50, headers: lowerCase) == .authorizeUpload(reserving: 50))
    }

    @Test func anUploadReservesItsDeclaredLengthOrItsLimitWhenChunked() {
        #expect(policy.decide(bodyLimit: 1_000, declaredLength: 50, headers: bearer) == .authorizeUpload(reserving: 50))
        #expect(policy.decide(bodyLimit: 1_000, declaredLength: 1_000, headers: bearer) == .authorizeUpload(reserving: 1_000))
        #expect(policy.decide(bodyLimit: 1_000, declaredLength: nil, headers: bearer) == .authorizeUpload(reserving: 1_000))
        #expect(policy.decide(bodyLimit: 1_000, declaredLength: 0, headers: bearer) == .authorizeUpload(reserving: 0))
    }

    func header(_ response: HTTPResponse, _ name: String) -> String? { response.headers.first { $0.0 == name }?.1 }

    @Test func theRefusalsAreTheServersProblemDetails() {
        let tooLarge = AdmissionPolicy.Refusal.tooLarge(limit: 10).answer.response
        #expect(tooLarge.status == 413 && header(tooLarge, "Connection") == "close")
        #expect(AdmissionPolicy.Refusal.tooLarge(limit: 10).answer.detail == "the body is over 10 bytes")
        let unauthorized = AdmissionPolicy.Refusal.bearerTokenRequired.answer.response
        #expect(unauthorized.status == 401 && header(unauthorized, "WWW-Authenticate") == "Bearer")
        let busy = AdmissionPolicy.Refusal.uploadBudgetFull.answer
        #expect(busy.status == 503 && busy.code == .serverBusy && header(busy.response, "Retry-After") == "1")
        let slow = AdmissionPolicy.Refusal.uploadTooSlow(minBytesPerSecond: 100).answer
        #expect(slow.status == 408 && slow.code == .requestTimeout)
        #expect(slow.detail == "the upload is slower than 100 bytes per second")
    }

    @Test func anUploadUnderTheMinimumRateIsTooSlow() {
        #expect(policy.isTooSlow(bytes: 2_999, elapsedMs: 30_000))
        #expect(!policy.isTooSlow(bytes: 3_000, elapsedMs: 30_000))
        #expect(!policy.isTooSlow(bytes: 0, elapsedMs: 0))
        let noMinimum = AdmissionPolicy(maxBodyBytes: 10)
        #expect(!noMinimum.isTooSlow(bytes: 0, elapsedMs: 60_000))
    }

    @Test func theServersConfigurationGivesThePolicy() {
        var configuration = HTTPServer.Configuration()
        configuration.maxBodyBytes = 123
        configuration.minUploadBytesPerSecond = 7
        configuration.uploadRateWindowSeconds = 5
        #expect(
            AdmissionPolicy(configuration)
                == AdmissionPolicy(maxBodyBytes: 123, minUploadBytesPerSecond: 7, uploadRateWindowMs: 5_000))
    }
}
