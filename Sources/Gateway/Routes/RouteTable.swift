/// Every route of ../shared/API.md plus the operational ones; `Gateway --print-routes` lists them
/// and the OpenAPI document must describe each.
extension Gateway {
    /// `(method, path template, needs a bearer token, handler)`.
    func routeTable() -> [(String, String, Bool, RouteHandler)] {
        [
            ("POST", "/v1/auth/register", false, { [unowned self] in try await self.register($0) }),
            ("POST", "/v1/auth/login", false, { [unowned self] in try await self.login($0) }),
            ("POST", "/v1/auth/logout", true, { [unowned self] in try await self.logout($0) }),
            ("GET", "/v1/me", true, { [unowned self] in try await self.getMe($0) }),
            ("GET", "/v1/users/{username}", true, { [unowned self] in try await self.profileHeader($0) }),
            (
                "GET", "/v1/users/{username}/posts", true,
                { [unowned self] in try await self.listPosts($0, tagged: false) }
            ),
            (
                "GET", "/v1/users/{username}/tagged", true,
                { [unowned self] in try await self.listPosts($0, tagged: true) }
            ),
            ("PUT", "/v1/users/{username}/follow", true, { [unowned self] in try await self.follow($0) }),
            (
                "DELETE", "/v1/users/{username}/follow", true,
                { [unowned self] in try await self.unfollow($0) }
            ),
            (
                "GET", "/v1/users/{username}/followers", true,
                { [unowned self] in try await self.listEdges($0, following: false) }
            ),
            (
                "GET", "/v1/users/{username}/following", true,
                { [unowned self] in try await self.listEdges($0, following: true) }
            ),
            ("POST", "/v1/posts", true, { [unowned self] in try await self.createPost($0) }),
            ("GET", "/v1/posts/{id}", true, { [unowned self] in try await self.getPost($0) }),
            ("DELETE", "/v1/posts/{id}", true, { [unowned self] in try await self.deletePost($0) }),
            (
                "PUT", "/v1/posts/{id}/like", true,
                { [unowned self] in try await self.setLike($0, liked: true) }
            ),
            (
                "DELETE", "/v1/posts/{id}/like", true,
                { [unowned self] in try await self.setLike($0, liked: false) }
            ),
            ("GET", "/v1/posts/{id}/likes", true, { [unowned self] in try await self.listLikes($0) }),
            (
                "GET", "/v1/posts/{id}/comments", true,
                { [unowned self] in try await self.listComments($0) }
            ),
            (
                "POST", "/v1/posts/{id}/comments", true, { [unowned self] in try await self.addComment($0) }
            ),
            ("GET", "/v1/settings", true, { [unowned self] in try await self.getSettings($0) }),
            ("PATCH", "/v1/settings", true, { [unowned self] in try await self.updateSettings($0) }),
            ("GET", "/v1/me/profile/edit", true, { [unowned self] in try await self.editForm($0) }),
            ("PATCH", "/v1/me/profile", true, { [unowned self] in try await self.updateProfile($0) }),
            (
                "GET", "/v1/notifications", true, { [unowned self] in try await self.listNotifications($0) }
            ),
            ("POST", "/v1/notifications/read", true, { [unowned self] in try await self.markRead($0) }),
            (
                "GET", "/v1/notifications/stream", true, { [unowned self] in try await self.openStream($0) }
            ),
            ("GET", "/healthz", false, { [unowned self] in self.healthz($0) }),
            ("GET", "/readyz", false, { [unowned self] in await self.readyz($0) }),
            ("GET", "/metrics", false, { [unowned self] in await self.metricsText($0) }),
            ("GET", "/openapi.json", false, { [unowned self] in self.openAPI($0) }),
        ]
    }

    /// A JSON reply.
    func reply(_ status: Int = 200, _ object: Any) -> HTTPResponse {
        .json(status, JSONOut.bytes(object))
    }
}
