import CZMQ
import Foundation
import Testing

@testable import Shared

/// The socket layer against real libzmq sockets.
struct TransportTests {
    @Test func multipartRoundTripOverInproc() throws {
        let context = ZMQContext()
        let pull = try ZMQSocket(context, .pull)
        try pull.bind("inproc://roundtrip")
        let push = try ZMQSocket(context, .push)
        try push.connect("inproc://roundtrip")
        #expect(try push.send([Array("a".utf8), [], Array(repeating: 7, count: 100_000)]))
        let frames = try pull.receive()
        #expect(frames?.count == 3)
        #expect(frames?[0] == Array("a".utf8))
        #expect(frames?[1] == [])
        #expect(frames?[2].count == 100_000)
    }

    @Test func nonBlockingReceiveIsAValueNotAnError() throws {
        let context = ZMQContext()
        let pull = try ZMQSocket(context, .pull)
        try pull.bind("inproc://empty")
        #expect(try pull.receive(dontWait: true) == nil)
    }

    @Test func ephemeralTCPBindReportsItsPort() throws {
        let context = ZMQContext()
        let router = try ZMQSocket(context, .router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        #expect(Int(endpoint.split(separator: ":").last ?? "") ?? 0 > 0)
    }

    @Test func errorsKeepErrnoAndText() throws {
        let context = ZMQContext()
        let socket = try ZMQSocket(context, .pub)
        #expect {
            try socket.bind("bogus://nowhere")
        } throws: { error in
            guard case .failed(let op, let code, let message) = error as? ZMQError else { return false }
            return op.contains("zmq_bind") && code != 0 && !message.isEmpty
        }
    }

    @Test func contextShutdownStopsABlockedReceive() async throws {
        let context = ZMQContext()
        let result = await withCheckedContinuation { (c: CheckedContinuation<String, Never>) in
            let thread = Thread {
                do {
                    let pull = try ZMQSocket(context, .pull)
                    try pull.bind("inproc://blocked")
                    _ = try pull.receive()
                    c.resume(returning: "received")
                } catch let e as ZMQError {
                    if case .contextTerminated = e { c.resume(returning: "terminated") } else { c.resume(returning: "\(e)") }
                } catch { c.resume(returning: "\(error)") }
            }
            thread.start()
            // The receive may start before or after shutdown; either way it must end with ETERM.
            context.shutdown()
        }
        #expect(result == "terminated")
    }

    @Test func pollerWakesOnAnEventfd() throws {
        let wakeup = Wakeup()
        let poller = Poller([.fd(wakeup.fd)])
        #expect(try poller.poll(timeoutMs: 0) == [false])
        wakeup.signal()
        #expect(try poller.poll(timeoutMs: 1_000) == [true])
        wakeup.drain()
        #expect(try poller.poll(timeoutMs: 0) == [false])
    }
}
