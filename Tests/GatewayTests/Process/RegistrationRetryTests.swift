import Foundation
import Harness
import TestSupport
import Testing
import Wire

/// A registration answered 503 because ProfileService died after AuthService made the account
/// (issue 18): the same request again finishes it, through the four real executables.
@Suite struct RegistrationRetryTests {
    /// Starts ProfileService again and waits until the gateway reaches it (`/readyz`).
    private func restartProfile(_ cluster: Cluster, _ http: HTTPClient) async throws {
        _ = cluster.stop("profile")
        try await cluster.start("profile")
        var ready = 0
        for _ in 0..<100 where ready != 200 { ready = try http.request("GET", "/readyz").status }
        #expect(ready == 200)
    }

    @Test func aRegistrationCutShortByProfileServiceIsFinishedByTheSameRequest() async throws {
        let directory = makeTemporaryDirectory("register-retry")
        let flag = "\(directory)/crash-on-create"
        let cluster = Cluster(
            dataDirectory: directory,
            extraEnvironment: ["PROFILE_TEST_CRASH_ON_CREATE_FILE": flag, "GATEWAY_RPC_TIMEOUT_MS": "5000"])
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let name = "r\(RandomID.make().prefix(8))"
        let body: [String: Any] = ["email": "\(name)@example.com", "username": name, "password": "correct-horse-9"]
        // ProfileService exits on the profile.create of this registration: AuthService has
        // made the account, the profile does not exist.
        #expect(FileManager.default.createFile(atPath: flag, contents: Data()))
        let first = try http.request("POST", "/v1/auth/register", json: body)
        #expect(first.status == 503 || first.status == 504, "\(first.status) \(first.text)")
        #expect(first.header("retry-after") != nil || first.status == 504)
        #expect(!cluster.processes["profile"]!.isRunning)
        try await restartProfile(cluster, http)
        // The same request finishes the registration it started.
        let again = try http.request("POST", "/v1/auth/register", json: body)
        #expect(again.status == 201, "\(again.status) \(again.text)")
        let token = again.object["token"] as? String ?? ""
        #expect((again.object["user"] as? [String: Any])?["username"] as? String == name)
        #expect(try http.request("GET", "/v1/me", token: token).status == 200)
        let login = try http.request("POST", "/v1/auth/login", json: ["login": name, "password": "correct-horse-9"])
        #expect(login.status == 200, "\(login.status) \(login.text)")
        // Finished now: a third time, the email is taken.
        let third = try http.request("POST", "/v1/auth/register", json: body)
        #expect(third.status == 409 && third.object["code"] as? String == "email_taken", "\(third.status) \(third.text)")
        // A repeat with another password never finishes someone's registration.
        let other = "s\(RandomID.make().prefix(8))"
        #expect(FileManager.default.createFile(atPath: flag, contents: Data()))
        let cut = try http.request(
            "POST", "/v1/auth/register",
            json: ["email": "\(other)@example.com", "username": other, "password": "correct-horse-9"])
        #expect(cut.status == 503 || cut.status == 504)
        try await restartProfile(cluster, http)
        let guess = try http.request(
            "POST", "/v1/auth/register", json: ["email": "\(other)@example.com", "username": other, "password": "wrong-horse-99"])
        #expect(guess.status == 409, "\(guess.status) \(guess.text)")
    }
}
