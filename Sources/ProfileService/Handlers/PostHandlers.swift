import BackendKit
import Foundation
import Messages
import Wire

/// Posts: `profile.create_post`, `profile.get_post`, `profile.delete_post`, `profile.list_posts`.
struct PostHandlers: Sendable {
    let users: any ProfileStore
    let posts: any PostStore
    /// Keyed creations (`idempotencyKey`): once per user and key.
    let idempotent: IdempotentWrites
    /// Told after a post is deleted (its upload may be unused now).
    var released: @Sendable () async -> Void = {}
    /// The operator's word list, applied to captions.
    var words = WordList.empty

    func register(on host: ServiceHost) {
        host.on(Profile.CreatePost.self) { request, _ in
            try await idempotent.run(
                userId: request.ownerId, key: request.idempotencyKey,
                fingerprint: { try RequestFingerprint.of(Profile.CreatePost.self, request) },
                write: { claim in try await createPost(request, idempotency: claim) })
        }
        host.on(Profile.GetPost.self) { request, _ in
            guard let post = try await posts.post(id: request.postId, viewerId: request.viewerId) else {
                throw ServiceError.notFound("post")
            }
            return post
        }
        host.on(Profile.DeletePost.self) { request, _ in
            try await posts.delete(id: request.postId, by: request.userId)
            await released()
            return Empty()
        }
        host.on(Profile.ListPosts.self) { request, _ in
            guard let key = Username.lookupKey(request.username), let user = try await users.users(usernames: [key])[key]
            else {
                throw ServiceError.notFound("user")
            }
            // A blocked viewer finds no such user; a private account's tabs are its followers'.
            try await users.access(viewer: request.viewerId, owner: user.id).requireReadable("user")
            return try await posts.page(
                userId: user.id, tagged: request.tagged, viewerId: request.viewerId, page: request.page)
        }
    }

    /// Validates every field and stores the post with its tags.
    /// - Parameters:
    ///   - mediaId: the owner's upload the post shows (its URLs are then paths the service made,
    ///     not checked as URLs), or nil.
    ///   - idempotency: the request's key claim (`IdempotentWrites`), recorded with the post.
    /// - Throws: 400 with every field error (`taggedUsernames` `unknown_user` names the unknown
    ///   ones), then 422 `objectionable_content` for a caption with a term of the word list, 404
    ///   for an unknown owner or an upload that is not the owner's, 409 `idempotency_key_in_use`.
    func createPost(
        _ request: Profile.CreatePost.Request, mediaId: String? = nil, idempotency: IdempotencyClaim? = nil
    ) async throws -> Profile.Post {
        var errors: [FieldError] = []
        if let e = ProfileRules.postType(request.postType) { errors.append(e) }
        if mediaId == nil {
            if let e = ProfileRules.url(request.mediaURL, field: "mediaURL") { errors.append(e) }
            if let e = ProfileRules.url(request.thumbnailURL, field: "thumbnailURL") { errors.append(e) }
        }
        let caption = request.caption ?? ""
        if let e = ProfileRules.caption(caption) { errors.append(e) }
        var names: [String] = []
        for typed in request.taggedUsernames {
            let trimmed = typed.trimmingCharacters(in: .whitespaces)
            let name = Username.lookupKey(trimmed) ?? trimmed  // a name no account can have stays as typed: unknown
            if names.contains(name) { continue }
            names.append(name)
        }
        if names.count > ProfileRules.maxTagged {
            errors.append(
                FieldError(
                    field: "taggedUsernames", .tooMany, message: "at most \(ProfileRules.maxTagged) tagged users"))
            names = []
        }
        guard let owner = try await users.user(id: request.ownerId) else { throw ServiceError.notFound("user") }
        var tagged = try await users.users(usernames: names)
        // Someone who blocks the owner, or whom the owner blocks, is tagged like an unknown name.
        for (name, user) in tagged {
            let access = try await users.access(viewer: owner.id, owner: user.id)
            if access == .hidden || access == .blocking { tagged[name] = nil }
        }
        let unknown = names.filter { tagged[$0] == nil }
        if !unknown.isEmpty {
            errors.append(
                FieldError(
                    field: "taggedUsernames", .unknownUser, message: "unknown: \(unknown.joined(separator: ", "))"))
        }
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        if let e = words.check(caption, field: "caption") { throw ServiceError.objectionableContent([e]) }
        return try await posts.create(
            NewPost(
                id: RandomID.make(), ownerId: owner.id, postType: request.postType, mediaURL: request.mediaURL,
                thumbnailURL: request.thumbnailURL, caption: caption, taggedUserIds: names.compactMap { tagged[$0]?.id },
                createdAt: Timestamp.now(), mediaId: mediaId, idempotency: idempotency))
    }
}
