import Foundation

// The Gateway: the HTTP API of ../shared/API.md in front of the three services.
// `Gateway --print-routes` prints every route as `METHOD /path/{param}` and exits.
exit(await GatewayApp.run())
