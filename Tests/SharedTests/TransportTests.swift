import CZMQ
import Foundation
import Testing

@testable import Transport

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

/// `SocketWait`: one `poll(2)` on a socket's `ZMQ_FD` and a wakeup, and the rule that keeps it
/// from sleeping past a message: after the socket was used, `ZMQ_EVENTS` is asked first. Each
/// wait is given 10 s: a correct wait returns at once, a wrong one returns empty after it.
struct SocketWaitTests {
    /// A ROUTER read dry and a DEALER connected to it over inproc (no I/O thread: each send's
    /// command reaches the ROUTER's mailbox before `send` returns).
    private func pair(_ name: String) throws -> (ZMQContext, ZMQSocket, ZMQSocket) {
        let context = ZMQContext()
        let router = try ZMQSocket(context, .router)
        try router.bind("inproc://\(name)")
        let dealer = try ZMQSocket(context, .dealer)
        try dealer.connect("inproc://\(name)")
        #expect(try router.receive(dontWait: true) == nil)
        return (context, router, dealer)
    }

    /// The DEALER sends a message; `takeSignal` may then do what a send on the ROUTER can;
    /// the wait must report the ROUTER readable, and the message must be there.
    private func messageIsFound(_ name: String, takeSignal: (ZMQSocket, inout SocketWait) throws -> Void) throws {
        let (context, router, dealer) = try pair(name)
        let wakeup = Wakeup()
        var waiter = try SocketWait(router, wakeup.fd)
        waiter.readDry()
        #expect(try dealer.send([Array("hello".utf8)]))
        try takeSignal(router, &waiter)
        let ready = try waiter.wait(timeoutMs: 10_000)
        #expect(ready.socket)
        #expect(try router.receive(dontWait: true)?.last == Array("hello".utf8))
        withExtendedLifetime(context) {}
    }

    @Test func aMessageAfterTheSocketWasReadDryWakesTheWait() throws {
        try messageIsFound("wait-dry") { _, _ in }
    }

    /// What a send on the socket may do: process the command that announced a message, so the
    /// descriptor no longer fires for it. After `used()`, the wait finds the message anyway.
    @Test func aMessageWhoseSignalASendTookIsFoundAfterUse() throws {
        try messageIsFound("wait-used") { router, waiter in
            let events = try router.events()  // the signal is taken here
            #expect(events & ZMQ_POLLIN != 0)
            waiter.used()
        }
    }

    @Test func theWakeupEndsTheWait() throws {
        let (context, router, _) = try pair("wait-wakeup")
        let wakeup = Wakeup()
        var waiter = try SocketWait(router, wakeup.fd)
        waiter.readDry()
        wakeup.signal()
        let ready = try waiter.wait(timeoutMs: 10_000)
        #expect(ready.fd)
        withExtendedLifetime(context) {}
    }
}
