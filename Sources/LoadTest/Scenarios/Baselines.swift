import Foundation

/// `--baseline`: the scenario's shape through raw libzmq (`Baseline`) and through nginx + nchan
/// (`NchanBaseline`), one after the other once the scenario is done, with the system's delivery
/// latency as ratios to each.
enum Baselines {
    /// Fills `report.baseline`, `report.nchanBaseline` (unless `--no-nchan`) and
    /// `report.baselineRatios`, and the plots' samples; a baseline that cannot run is a failure
    /// of the report, not an error.
    static func run(
        _ report: inout RunReport, _ plots: inout PlotData, engine: CurlEngine, streams: CurlEngine, options: Options,
        subscribers: Int,
        rate: Double, duration: Double, payloadBytes: Int, fanout: Bool, messages: Int? = nil
    ) async {
        do {
            let (b, samples) = try Baseline.run(
                subscribers: subscribers, rate: rate, duration: duration, payloadBytes: payloadBytes,
                fanout: fanout, seed: options.seed, messages: messages)
            report.baseline = b
            plots.baseline = samples
        } catch {
            report.failures.append("baseline did not run: \(error)")
        }
        if options.nchan {
            log("baseline: nginx + nchan, \(subscribers) SSE subscribers")
            do {
                let (b, samples) = try await NchanBaseline.run(
                    engine: engine, streams: streams, subscribers: subscribers, rate: rate, duration: duration,
                    payloadBytes: payloadBytes,
                    fanout: fanout, seed: options.seed, messages: messages)
                report.nchanBaseline = b
                plots.nchan = samples
            } catch {
                report.failures.append("nchan baseline did not run: \(error)")
            }
        }
        report.baselineRatios = ratios(report)
    }

    /// The system's delivery latency over each baseline's, and nchan's over libzmq's.
    static func ratios(_ r: RunReport) -> BaselineRatios {
        var out = BaselineRatios()
        let system = r.delivery.latencyMs
        if let z = r.baseline {
            out.systemOverLibzmq = system.count > 0 ? LatencyRatios(system: system, baseline: z.latencyMs) : nil
        }
        if let n = r.nchanBaseline {
            out.systemOverNchan = system.count > 0 ? LatencyRatios(system: system, baseline: n.latencyMs) : nil
            if let z = r.baseline { out.nchanOverLibzmq = LatencyRatios(system: n.latencyMs, baseline: z.latencyMs) }
        }
        return out
    }
}
