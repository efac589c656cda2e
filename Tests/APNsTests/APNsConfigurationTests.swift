import Foundation
import Harness
import TestSupport
import Testing

@testable import APNs

@Suite struct APNsConfigurationTests {
    let directory: String
    let complete: [String: String]

    init() throws {
        directory = makeTemporaryDirectory("apns-config")
        try APNsStandIn.makeCredentials(in: directory)
        complete = [
            "APNS_KEY_FILE": "\(directory)/apns-key.p8", "APNS_KEY_ID": "KEY1234567", "APNS_TEAM_ID": "TEAM123456",
            "APNS_TOPIC": "com.example.insta", "APNS_URL": "https://api.sandbox.push.apple.com/",
        ]
    }

    @Test func unsetMeansPushOff() throws {
        #expect(try APNsConfiguration.fromEnvironment([:]) == nil)
        #expect(try APNsConfiguration.fromEnvironment(["APNS_KEY_ID": "", "PATH": "/bin"]) == nil)
    }

    @Test func completeEnvironmentIsRead() throws {
        let configuration = try #require(try APNsConfiguration.fromEnvironment(complete))
        #expect(configuration.keyFile == "\(directory)/apns-key.p8")
        #expect(configuration.keyID == "KEY1234567")
        #expect(configuration.teamID == "TEAM123456")
        #expect(configuration.topic == "com.example.insta")
        #expect(configuration.baseURL == "https://api.sandbox.push.apple.com")
        #expect(configuration.caFile == nil)
        #expect(configuration.connections == 2)
        var more = complete
        more["APNS_CA_FILE"] = "\(directory)/ca.pem"
        more["APNS_CONNECTIONS"] = "4"
        let other = try #require(try APNsConfiguration.fromEnvironment(more))
        #expect(other.caFile == "\(directory)/ca.pem")
        #expect(other.connections == 4)
    }

    @Test(arguments: ["APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC", "APNS_URL"])
    func partlySetNamesTheMissingVariable(missing: String) {
        var environment = complete
        environment[missing] = nil
        #expect(throws: APNsConfigurationError.self) { try APNsConfiguration.fromEnvironment(environment) }
        do {
            _ = try APNsConfiguration.fromEnvironment(environment)
        } catch {
            #expect(error.variable == missing)
            #expect(error.description.hasPrefix("\(missing) is not set"))
        }
    }

    @Test func badValuesNameTheirVariable() throws {
        func variable(_ changes: [String: String]) -> String? {
            do {
                _ = try APNsConfiguration.fromEnvironment(complete.merging(changes) { $1 })
                return nil
            } catch {
                return error.variable
            }
        }
        #expect(variable(["APNS_KEY_FILE": "\(directory)/missing.p8"]) == "APNS_KEY_FILE")
        #expect(variable(["APNS_KEY_FILE": "\(directory)/ca.pem"]) == "APNS_KEY_FILE")
        #expect(variable(["APNS_KEY_FILE": "\(directory)/apns-key.pub"]) == "APNS_KEY_FILE")
        #expect(variable(["APNS_URL": "http://api.push.apple.com"]) == "APNS_URL")
        #expect(variable(["APNS_KEY_ID": "KEY\"1"]) == "APNS_KEY_ID")
        #expect(variable(["APNS_TEAM_ID": "TEAM 1"]) == "APNS_TEAM_ID")
        #expect(variable(["APNS_TOPIC": "com.example app"]) == "APNS_TOPIC")
        #expect(variable(["APNS_CA_FILE": "\(directory)/missing.pem"]) == "APNS_CA_FILE")
        #expect(variable(["APNS_CONNECTIONS": "0"]) == "APNS_CONNECTIONS")
        #expect(variable(["APNS_CONNECTIONS": "two"]) == "APNS_CONNECTIONS")
        #expect(variable([:]) == nil)
    }
}
