import ServiceKit

/// The HTTP server as a service that closes the notification streams (and refuses new ones)
/// when it is asked to stop.
struct StreamClosingServer: Service {
    let server: HTTPServer
    let hub: StreamHub
    func run() async { await server.run() }
    func shutdownGracefully() {
        hub.closeAll()
        server.shutdownGracefully()
    }
}
