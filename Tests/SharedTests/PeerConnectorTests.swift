import CZMQ
import Foundation
import Harness
import Testing

@testable import ServiceKit
@testable import Support
@testable import Transport
@testable import Wire

/// Client sockets connect to a looked-up address, never to a name libzmq would look up itself
/// on its I/O thread (`PeerConnector`, `HostLookup`, `TCPEndpoint`).
struct PeerConnectorTests {
    let logger = Logger(service: "test", minimum: .error)

    @Test func endpointsSplitIntoHostAndPort() {
        #expect(TCPEndpoint("tcp://auth:5551").map { [$0.host, $0.port] } == ["auth", "5551"])
        #expect(TCPEndpoint("tcp://auth:5551")?.hostIsAddress == false)
        #expect(TCPEndpoint("tcp://10.89.0.3:5553")?.hostIsAddress == true)
        #expect(TCPEndpoint("tcp://[::1]:5553").map { [$0.host, $0.port] } == ["::1", "5553"])
        #expect(TCPEndpoint("tcp://[::1]:5553")?.hostIsAddress == true)
        #expect(TCPEndpoint("tcp://auth:5551")?.endpoint(address: "10.89.0.2") == "tcp://10.89.0.2:5551")
        #expect(TCPEndpoint("tcp://auth:5551")?.endpoint(address: "fd00::2") == "tcp://[fd00::2]:5551")
        // Handed to libzmq as they are.
        for endpoint in ["inproc://x", "ipc:///tmp/x", "tcp://eth0;auth:5551", "tcp://*:5551", "tcp://auth", "tcp://auth:x"] {
            #expect(TCPEndpoint(endpoint) == nil, "\(endpoint)")
        }
    }

    @Test func aLookupFindsAnIPv4Address() {
        #expect(HostLookup.resolve("localhost") == .address("127.0.0.1"))
        #expect(HostLookup.resolve("127.0.0.1") == .address("127.0.0.1"))
    }

    @Test func aClientGivenAHostNameReachesTheServiceAtItsAddress() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let bound = host.boundEndpoints.withLock { $0.rpc }
        let port = try #require(bound.split(separator: ":").last)
        let client = try RPCClient(service: "test", endpoint: "tcp://localhost:\(port)", context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        let reply = try await client.call(TestRPC.Echo.self, .init(text: "by name"), timeoutMs: 10_000)
        #expect(reply.text == "by name")
    }

    @Test func aClientFollowsAServiceThatComesBackAtAnotherAddress() async throws {
        let context = ZMQContext()
        let first = try makeTestHost(context: context)
        let bound = first.boundEndpoints.withLock { $0.rpc }
        let port = try #require(bound.split(separator: ":").last)
        let address = Locked("127.0.0.1")
        let lookups = Locked(0)
        let client = try RPCClient(
            service: "test", endpoint: "tcp://svc.test:\(port)", context: context, logger: logger,
            resolver: { host in
                lookups.withLock { $0 += 1 }
                return host == "svc.test" ? .address(address.withLock { $0 }) : .failed("unknown")
            })
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        #expect(try await client.call(TestRPC.Echo.self, .init(text: "first"), timeoutMs: 10_000).text == "first")

        // The service stops and comes back on another address of this machine, same port.
        first.stop()
        try await eventually("the client sees the connection drop") { !client.isConnected }
        address.withLock { $0 = "127.0.0.2" }
        let second = try makeTestHost(context: context, rpc: "tcp://127.0.0.2:\(port)")
        defer { second.stop() }
        try await waitUntilConnected(client)
        #expect(try await client.call(TestRPC.Echo.self, .init(text: "second"), timeoutMs: 10_000).text == "second")
        #expect(lookups.withLock { $0 } >= 2)
    }
}
