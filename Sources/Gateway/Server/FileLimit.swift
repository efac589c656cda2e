#if canImport(Glibc)
    import Glibc
#endif

/// Raises the open-file limit (`RLIMIT_NOFILE`) toward `wanted`, within the hard limit, so
/// thousands of connections (each an fd) fit; the default soft limit is often 1,024.
/// - Returns: the soft limit now in force.
@discardableResult
func raiseOpenFileLimit(to wanted: Int) -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    let target = min(rlim_t(wanted), limit.rlim_max)
    if limit.rlim_cur < target {
        limit.rlim_cur = target
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(limit.rlim_cur)
}
