import Foundation

/// Writes a run's report: the terminal table, `report.json`, `report.svg` and `report.html`.
enum ReportWriter {
    /// Writes the files into `directory` (created) and prints the table on stdout.
    /// - Returns: the paths written.
    /// - Throws: file-system errors.
    @discardableResult
    static func write(_ report: RunReport, plots: PlotData, to directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        let jsonPath = "\(directory)/report.json"
        try enc.encode(report).write(to: URL(fileURLWithPath: jsonPath))
        let svg = SVGPlot.render(report, plots)
        let svgPath = "\(directory)/report.svg"
        try Data(svg.utf8).write(to: URL(fileURLWithPath: svgPath))
        let htmlPath = "\(directory)/report.html"
        let html = """
            <!doctype html><html><head><meta charset="utf-8"><title>LoadTest \(report.scenario)</title>
            <style>body{font-family:sans-serif;margin:2em}pre{background:#f6f6f6;padding:1em}</style></head><body>
            <h1>LoadTest: \(report.scenario)</h1>\(svg)<pre>\(escape(table(report)))</pre></body></html>
            """
        try Data(html.utf8).write(to: URL(fileURLWithPath: htmlPath))
        print(table(report))
        print("report: \(jsonPath), \(svgPath), \(htmlPath)")
        return [jsonPath, svgPath, htmlPath]
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// The terminal table.
    static func table(_ r: RunReport) -> String {
        var lines: [String] = []
        func row(_ k: String, _ v: String) {
            lines.append(k.padding(toLength: 32, withPad: " ", startingAt: 0) + v)
        }
        func lat(_ s: LatencySummary) -> String {
            String(
                format: "p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f ms  (n=%d)", s.p50, s.p90,
                s.p99, s.p999, s.max, s.count)
        }
        lines.append("== LoadTest \(r.scenario) (seed \(r.seed), \(r.url)) ==")
        row(
            "parameters",
            r.parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        )
        row("duration", String(format: "%.1f s", r.durationS))
        row("actions sent / ok", "\(r.actionsSent) / \(r.actionsOK)")
        row("throughput", String(format: "%.1f actions/s", r.throughputPerSecond))
        row("HTTP latency", lat(r.httpLatencyMs))
        row(
            "errors by status",
            r.errorsByStatus.isEmpty
                ? "none"
                : r.errorsByStatus.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(
                    separator: ", "))
        row("streams open / closed early", "\(r.streamsOpen) / \(r.streamsClosedEarly)")
        row("stream reconnects (failed)", "\(r.streamReconnects) (\(r.streamReconnectFailures))")
        let d = r.delivery
        row(
            "notifications expected", "\(d.expected) (streamed \(d.streamed), found in lists \(d.listed))"
        )
        row("loss / duplicates / unexpected", "\(d.lost) / \(d.duplicates) / \(d.unexpected)")
        row("delivery latency", lat(d.latencyMs))
        if let c = r.celebrityPush {
            row("celebrity pushes", "\(c.expected) expected, \(c.streamed) at APNs, lost \(c.lost), duplicates \(c.duplicates)")
            row("celebrity push latency", lat(c.latencyMs))
        }
        if let p = r.persistence {
            row(
                "persistence checked",
                "\(p.followersChecked) followers: found \(p.found), missing \(p.missing)")
            row("persistence latency", lat(p.latencyMs))
            row(
                "all persisted within",
                p.allPersistedWithinMs.map { within in
                    String(format: "%.0f ms", within)
                        + (p.allPersistedAfterMs.map { String(format: " (and after %.0f ms: the last check that missed)", $0) }
                            ?? "")
                } ?? "never (missing)")
            if let n = p.checkRequests, let every = p.effectiveCheckIntervalMs {
                row("persistence checks", String(format: "%d list requests, each list read every %.0f ms", n, every))
            }
        }
        if let b = r.baseline {
            row(
                "baseline (raw libzmq)",
                "\(b.subscribers) SUB, \(b.payloadBytes) B, \(String(format: "%.0f", b.ratePerSecond)) msg/s, received \(b.received)/\(b.expected), lost \(b.lost)"
            )
            row("baseline latency", lat(b.latencyMs))
        }
        if let n = r.nchanBaseline {
            row(
                "baseline (nginx + nchan)",
                "\(n.subscribers) SSE, \(n.payloadBytes) B, \(String(format: "%.0f", n.ratePerSecond)) msg/s, received \(n.received)/\(n.expected), lost \(n.lost), dup \(n.duplicates ?? 0), publish errors \(n.publishErrors ?? 0)"
            )
            row("nchan latency", lat(n.latencyMs))
            if let server = n.server { row("nchan server", server) }
        }
        if let q = r.baselineRatios {
            func ratios(_ x: LatencyRatios?) -> String? {
                guard let x else { return nil }
                func f(_ v: Double?) -> String { v.map { String(format: "×%.1f", $0) } ?? "n/a" }
                return "p50 \(f(x.p50))  p99 \(f(x.p99))  max \(f(x.max))"
            }
            if let v = ratios(q.systemOverLibzmq) { row("delivery ÷ raw libzmq", v) }
            if let v = ratios(q.systemOverNchan) { row("delivery ÷ nginx + nchan", v) }
            if let v = ratios(q.nchanOverLibzmq) { row("nginx + nchan ÷ raw libzmq", v) }
        }
        if let m = r.gatewayStreamMemory {
            row(
                "gateway memory per stream",
                String(
                    format: "%.1f KiB (RSS %.1f → %.1f MiB with %d streams open)", Double(m.bytesPerStream) / 1024,
                    Double(m.rssBeforeKB) / 1024, Double(m.rssAfterKB) / 1024, m.streams))
        }
        row(
            "peak RSS (VmHWM)",
            r.peakRSSKB.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value / 1024) MiB" }.joined(
                separator: ", "))
        if let total = r.cpuPerActionMs["total"] {
            let parts = r.cpuPerActionMs.filter { $0.key != "total" }.sorted { $0.key < $1.key }
                .map { String(format: "%@ %.0f", $0.key, $0.value * 1000) }
            row(
                "CPU per action (µs)",
                String(format: "total %.0f (", total * 1000) + parts.joined(separator: ", ") + ")")
        }
        row("checks", "\(r.checks.count) passed, \(r.failures.count) failed")
        for f in r.failures { lines.append("  FAILED: \(f)") }
        return lines.joined(separator: "\n")
    }
}

/// A hand-written SVG: latency over time (per-second p50/p99 lines over a sampled scatter) and
/// a latency histogram, both on a log-scaled latency axis; the baseline in green beside the system.
enum SVGPlot {
    static let width = 900.0
    static let panel = 320.0

    static func render(_ r: RunReport, _ p: PlotData) -> String {
        var s = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(2 * panel + 80))" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="18" font-size="14">\(r.scenario): delivery latency over time (ms, log) — blue p50, red p99 per second, grey samples\(r.baseline != nil ? ", green libzmq p99" : "")\(r.nchanBaseline != nil ? ", orange nginx + nchan p99" : "")</text>

            """
        let all = p.delivery.map(\.ms) + p.baseline.map(\.ms) + p.nchan.map(\.ms)
        let lo = max(0.01, min(all.min() ?? 0.1, 0.1))
        let hi = max(10, (all.max() ?? 10) * 1.2)
        let logLo = log10(lo)
        let logHi = log10(hi)
        let tMax = max(1, (p.delivery.map(\.atS) + p.baseline.map(\.atS) + p.nchan.map(\.atS)).max() ?? 1)
        let x0 = 60.0
        let x1 = width - 20
        let y0 = 30.0
        let y1 = y0 + panel - 40
        func x(_ t: Double) -> Double { x0 + (x1 - x0) * t / tMax }
        func y(_ ms: Double) -> Double {
            y1 - (y1 - y0) * (log10(max(ms, lo)) - logLo) / (logHi - logLo)
        }
        s += axes(x0: x0, x1: x1, y0: y0, y1: y1, logLo: logLo, logHi: logHi, y: y)
        s += "<text x=\"\(x1)\" y=\"\(y1 + 30)\" text-anchor=\"end\">seconds from start</text>\n"
        let tickStep = max(1.0, (tMax / 10).rounded(.up))
        var tick = 0.0
        while tick <= tMax {
            s += "<text x=\"\(f(x(tick)))\" y=\"\(y1 + 14)\" text-anchor=\"middle\">\(Int(tick))</text>"
            tick += tickStep
        }
        let step = max(1, p.delivery.count / 4000)
        var i = 0
        while i < p.delivery.count {
            let d = p.delivery[i]
            s +=
                "<circle cx=\"\(f(x(d.atS)))\" cy=\"\(f(y(d.ms)))\" r=\"1.2\" fill=\"#999\" fill-opacity=\"0.5\"/>"
            i += step
        }
        s += "\n"
        func line(
            _ pts: [TimelinePoint], _ value: (TimelinePoint) -> Double, _ color: String,
            dash: Bool = false
        ) -> String {
            guard !pts.isEmpty else { return "" }
            let d = pts.map { "\(f(x(Double($0.second) + 0.5))),\(f(y(value($0))))" }.joined(
                separator: " ")
            return
                "<polyline points=\"\(d)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\"\(dash ? " stroke-dasharray=\"4 3\"" : "")/>\n"
        }
        s += line(r.delivery.timeline, { $0.p50 }, "#1f5fbf")
        s += line(r.delivery.timeline, { $0.p99 }, "#d62728")
        if let b = r.baseline { s += line(b.timeline, { $0.p99 }, "#2ca02c", dash: true) }
        if let n = r.nchanBaseline { s += line(n.timeline, { $0.p99 }, "#ff7f0e", dash: true) }

        // Histogram.
        let hy0 = y1 + 60
        let hy1 = hy0 + panel - 40
        s +=
            "<text x=\"10\" y=\"\(hy0 - 12)\" font-size=\"14\">latency histogram (count per log bin; blue system, green libzmq, orange nginx + nchan)</text>\n"
        let binsPerDecade = 10.0
        let nBins = Int(((logHi - logLo) * binsPerDecade).rounded(.up))
        func bins(_ v: [Double]) -> [Int] {
            var b = [Int](repeating: 0, count: max(1, nBins))
            for m in v {
                let k = Int((log10(max(m, lo)) - logLo) * binsPerDecade)
                b[min(b.count - 1, max(0, k))] += 1
            }
            return b
        }
        let sys = bins(p.delivery.map(\.ms))
        let base = bins(p.baseline.map(\.ms))
        let nchan = bins(p.nchan.map(\.ms))
        let maxCount = Double(max(1, (sys + base + nchan).max() ?? 1))
        let bw = (x1 - x0) / Double(max(1, nBins))
        s += "<line x1=\"\(x0)\" y1=\"\(hy1)\" x2=\"\(x1)\" y2=\"\(hy1)\" stroke=\"black\"/>\n"
        for k in 0..<sys.count {
            let bx = x0 + Double(k) * bw
            if sys[k] > 0 {
                let h = (hy1 - hy0) * Double(sys[k]) / maxCount
                s +=
                    "<rect x=\"\(f(bx))\" y=\"\(f(hy1 - h))\" width=\"\(f(bw * 0.9))\" height=\"\(f(h))\" fill=\"#1f5fbf\" fill-opacity=\"0.7\"/>"
            }
            if k < base.count && base[k] > 0 {
                let h = (hy1 - hy0) * Double(base[k]) / maxCount
                s +=
                    "<rect x=\"\(f(bx))\" y=\"\(f(hy1 - h))\" width=\"\(f(bw * 0.9))\" height=\"\(f(h))\" fill=\"none\" stroke=\"#2ca02c\"/>"
            }
            if k < nchan.count && nchan[k] > 0 {
                let h = (hy1 - hy0) * Double(nchan[k]) / maxCount
                s +=
                    "<rect x=\"\(f(bx))\" y=\"\(f(hy1 - h))\" width=\"\(f(bw * 0.9))\" height=\"\(f(h))\" fill=\"none\" stroke=\"#ff7f0e\" stroke-dasharray=\"3 2\"/>"
            }
        }
        s += "\n"
        var decade = logLo.rounded(.up)
        while decade <= logHi {
            let tx = x0 + (decade - logLo) * binsPerDecade * bw
            s +=
                "<text x=\"\(f(tx))\" y=\"\(hy1 + 14)\" text-anchor=\"middle\">\(label(pow(10, decade))) ms</text>"
            decade += 1
        }
        s += "<text x=\"\(x0)\" y=\"\(hy0)\">max bin \(Int(maxCount))</text>\n"
        // The p99s side by side, with the system's ratio to each baseline.
        var p99s: [String] = []
        if r.delivery.latencyMs.count > 0 { p99s.append(String(format: "system %.2f ms", r.delivery.latencyMs.p99)) }
        if let b = r.baseline {
            p99s.append(
                String(format: "libzmq %.2f ms", b.latencyMs.p99)
                    + (r.baselineRatios?.systemOverLibzmq?.p99.map { String(format: " (system ×%.1f)", $0) } ?? ""))
        }
        if let n = r.nchanBaseline {
            p99s.append(
                String(format: "nginx + nchan %.2f ms", n.latencyMs.p99)
                    + (r.baselineRatios?.systemOverNchan?.p99.map { String(format: " (system ×%.1f)", $0) } ?? ""))
        }
        if !p99s.isEmpty {
            s +=
                "<text x=\"\(x1)\" y=\"\(hy0)\" text-anchor=\"end\">p99: \(ReportWriter.escape(p99s.joined(separator: ", ")))</text>\n"
        }
        s += "</svg>\n"
        return s
    }

    static func axes(
        x0: Double, x1: Double, y0: Double, y1: Double, logLo: Double, logHi: Double,
        y: (Double) -> Double
    ) -> String {
        var s =
            "<line x1=\"\(x0)\" y1=\"\(y1)\" x2=\"\(x1)\" y2=\"\(y1)\" stroke=\"black\"/><line x1=\"\(x0)\" y1=\"\(y0)\" x2=\"\(x0)\" y2=\"\(y1)\" stroke=\"black\"/>\n"
        var decade = logLo.rounded(.up)
        while decade <= logHi {
            let v = pow(10, decade)
            s +=
                "<line x1=\"\(x0)\" y1=\"\(f(y(v)))\" x2=\"\(x1)\" y2=\"\(f(y(v)))\" stroke=\"#ddd\"/><text x=\"\(x0 - 5)\" y=\"\(f(y(v) + 4))\" text-anchor=\"end\">\(label(v))</text>\n"
            decade += 1
        }
        return s
    }

    static func label(_ v: Double) -> String { v >= 1 ? String(Int(v)) : String(format: "%g", v) }
    static func f(_ v: Double) -> String { String(format: "%.1f", v) }
}
