import CZMQ
import Foundation
import Support
import Transport

/// The transport's own ceiling: raw libzmq PUB → SUB sockets over loopback TCP in this
/// process, with the same payload size and rate (and fan-out shape) as the scenario.
///
/// K streams are spread over at most `maxSockets` SUB sockets, each subscribed to the topics of
/// its streams (stream i on socket i mod S), as a gateway holds many recipients' subscriptions on
/// one socket: a socket per stream needs three descriptors per stream (10,000 streams would
/// exceed a 20,000 descriptor limit) and libzmq refuses more than 1,023 sockets per context
/// (`ZMQ_MAX_SOCKETS`). In the celebrity shape a message is counted once per socket.
///
/// Likes shape (`fanout: false`): each message goes to one random subscriber (topic `u<i>|`).
/// Celebrity shape (`fanout: true`): each message goes to every subscriber (topic `all|`).
/// Latency is from the message's scheduled send time to its receipt.
enum Baseline {
    /// The most SUB sockets a run opens (below libzmq's default `ZMQ_MAX_SOCKETS`, 1,023).
    static let maxSockets = 1_000

    /// - Parameters:
    ///   - messages: how many messages (default rate × duration).
    /// - Returns: the report and its samples.
    /// - Throws: `ZMQError` when sockets cannot be set up, `LoadTestError` when subscriptions never settle.
    static func run(
        subscribers k: Int, rate: Double, duration: Double, payloadBytes: Int, fanout: Bool,
        seed: UInt64, messages: Int? = nil
    ) throws -> (BaselineReport, [Sample]) {
        let k = max(1, k)
        let sockets = min(k, maxSockets)
        let total = messages ?? max(1, Int(rate * duration))
        let context = ZMQContext(ioThreads: 1)
        let endpoint = Locked<String?>(nil)
        let ready = Locked(false)
        let stop = Locked(false)
        let samples = Locked([Sample]())
        let t0Box = Locked<UInt64>(0)
        let failure = Locked<String?>(nil)
        let payload = max(payloadBytes, 24)
        let expected = fanout ? total * sockets : total
        let headerBytes = 16

        let pubBound = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let receiverDone = DispatchSemaphore(value: 0)

        // Publisher thread: binds, probes until every subscriber hears, then sends on schedule.
        let publisher = Thread {
            defer { finished.signal() }
            do {
                let pub = try ZMQSocket(context, .pub)
                try pub.setHighWaterMarks(send: 1_000_000, receive: 1_000_000)
                endpoint.withLock { $0 = try? pub.bind("tcp://127.0.0.1:*") }
                pubBound.signal()
                let probeEnd = Clock.nowNs() + 30_000_000_000
                while !ready.withLock({ $0 }) {
                    try pub.send([Array("all|probe".utf8)])
                    Thread.sleep(forTimeInterval: 0.01)
                    if Clock.nowNs() > probeEnd {
                        throw LoadTestError("baseline subscriptions did not settle")
                    }
                }
                var rng = SeededRandom(seed: seed &+ 0x62_6173_65)
                let interval = 1e9 / max(rate, 0.001)
                let t0 = Clock.nowNs() + 50_000_000
                t0Box.withLock { $0 = t0 }
                var frame = [UInt8](repeating: UInt8(ascii: "x"), count: 0)
                for i in 0..<total {
                    let at = t0 + UInt64(Double(i) * interval)
                    while true {
                        let now = Clock.nowNs()
                        if now >= at { break }
                        let wait = at - now
                        if wait > 200_000 { Thread.sleep(forTimeInterval: Double(wait - 100_000) / 1e9) }
                    }
                    let topic = fanout ? "all|" : "u\(Int(rng.next() % UInt64(k)))|"
                    frame = Array(topic.utf8)
                    var seq = UInt64(i).littleEndian
                    var ts = at.littleEndian
                    withUnsafeBytes(of: &seq) { frame.append(contentsOf: $0) }
                    withUnsafeBytes(of: &ts) { frame.append(contentsOf: $0) }
                    if frame.count < payload {
                        frame.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: payload - frame.count))
                    }
                    try pub.send([frame])
                }
                receiverDone.wait()
            } catch {
                failure.withLock { $0 = "\(error)" }
                pubBound.signal()
                ready.withLock { $0 = true }
                stop.withLock { $0 = true }
            }
        }
        publisher.start()
        pubBound.wait()
        guard let ep = endpoint.withLock({ $0 }) else {
            throw LoadTestError(failure.withLock { $0 } ?? "baseline: PUB did not bind")
        }

        // Receiver thread: the SUB sockets polled together.
        let receiver = Thread {
            defer { receiverDone.signal() }
            do {
                var subs: [ZMQSocket] = []
                for i in 0..<sockets {
                    let s = try ZMQSocket(context, .sub)
                    try s.setHighWaterMarks(send: 1_000_000, receive: 1_000_000)
                    for stream in stride(from: i, to: k, by: sockets) { try s.subscribe("u\(stream)|") }
                    try s.subscribe("all|")
                    try s.connect(ep)
                    subs.append(s)
                }
                let poller = Poller(subs.map { .socket($0) })
                var probed = Set<Int>()
                var received = 0
                var local: [Sample] = []
                local.reserveCapacity(expected)
                var deadline: UInt64 = .max
                while received < expected && !stop.withLock({ $0 }) {
                    let readable = try poller.poll(timeoutMs: 50)
                    let now = Clock.nowNs()
                    for (i, r) in readable.enumerated() where r {
                        while let msg = try subs[i].receive(dontWait: true) {
                            let f = msg[0]
                            guard let bar = f.firstIndex(of: UInt8(ascii: "|")) else { continue }
                            if f.count >= bar + 1 + headerBytes {
                                var ts: UInt64 = 0
                                withUnsafeMutableBytes(of: &ts) { $0.copyBytes(from: f[(bar + 9)..<(bar + 17)]) }
                                let at = UInt64(littleEndian: ts)
                                let t0 = t0Box.withLock { $0 }
                                local.append(
                                    Sample(atS: Clock.ms(from: t0, to: at) / 1000, ms: Clock.ms(from: at, to: now)))
                                received += 1
                            } else if !ready.withLock({ $0 }) {
                                probed.insert(i)
                                if probed.count == sockets { ready.withLock { $0 = true } }
                            }
                        }
                    }
                    if ready.withLock({ $0 }) && deadline == .max {
                        deadline = Clock.nowNs() + UInt64((duration + 10) * 1e9)
                    }
                    if Clock.nowNs() > deadline { break }
                }
                samples.withLock { $0 = local }
                for s in subs { s.close() }
            } catch {
                failure.withLock { $0 = "\(error)" }
                ready.withLock { $0 = true }
            }
        }
        receiver.start()
        finished.wait()
        if let f = failure.withLock({ $0 }) { throw LoadTestError("baseline: \(f)") }
        let got = samples.withLock { $0 }
        var b = BaselineReport()
        b.subscribers = k
        b.messages = total
        b.expected = expected
        b.received = got.count
        b.lost = expected - got.count
        b.payloadBytes = payload
        b.ratePerSecond = rate
        b.latencyMs = LatencySummary(got.map(\.ms))
        b.timeline = TimelinePoint.timeline(got)
        return (b, got)
    }
}
