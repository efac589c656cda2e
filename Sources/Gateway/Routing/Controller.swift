/// One area of the API: registers its routes.
protocol Controller: Sendable {
    func register(_ routes: inout RouteCollection)
}
