import Testing

@testable import Messages
@testable import Storage
@testable import Wire

/// Pins the wire format: these bytes are the contract between builds of different age.
struct GoldenJSONTests {
    @Test func requestEnvelope() throws {
        let envelope = RequestEnvelope(
            id: "c0ffee", type: Auth.Login.type, deadline: 1_764_439_490_123, trace: "t1",
            body: Auth.Login.Request(login: "alice", password: "pw"))
        let json = String(decoding: try WireJSON.encode(envelope), as: UTF8.self)
        #expect(
            json
                == #"{"body":{"login":"alice","password":"pw"},"deadline":1764439490123,"id":"c0ffee","trace":"t1","type":"auth.login","v":1}"#
        )
    }

    @Test func replyWithBodyAndReplyWithError() throws {
        let ok = ReplyEnvelope(
            id: "c1", type: "notification.unfollow", body: Notifications.Unfollow.Reply(followState: .notFollowing), error: nil)
        #expect(
            String(decoding: try WireJSON.encode(ok), as: UTF8.self)
                == #"{"body":{"followState":"not_following"},"id":"c1","type":"notification.unfollow","v":1}"#)
        let failed = ReplyEnvelope<Empty>(
            id: "c2", type: "auth.register", body: nil,
            error: .validation(
                [FieldError(field: "email", code: "invalid_email", message: "not an email")], code: "invalid_email"))
        #expect(
            String(decoding: try WireJSON.encode(failed), as: UTF8.self)
                == #"{"error":{"code":"invalid_email","fields":[{"code":"invalid_email","field":"email","message":"not an email"}],"message":"email: not an email","status":400},"id":"c2","type":"auth.register","v":1}"#
        )
    }

    /// The envelopes' direct writers give the same bytes as the Codable writer: members sorted,
    /// absent members left out, strings escaped, whatever the body.
    @Test func directEnvelopeWritersMatchTheCodableWriter() throws {
        func same<T: Encodable>(_ value: T, _ direct: [UInt8]) throws {
            let codable = try WireJSON.encode(value)
            #expect(
                direct == codable, "\(String(decoding: direct, as: UTF8.self)) != \(String(decoding: codable, as: UTF8.self))")
            #expect(throws: Never.self) { _ = try JSONParser.parse(direct) }
        }
        for (id, type, trace) in [("c0ffee", "auth.login", "t1"), ("a\"b\\c\n\u{1}", "앨리스/é", ""), ("", "", "x")] {
            for deadline: Int64 in [0, -5, 1_764_439_490_123, .max] {
                let login = RequestEnvelope(
                    id: id, type: type, deadline: deadline, trace: trace,
                    body: Auth.Login.Request(login: "alice \"x\"", password: "pw"))
                try same(login, try login.encoded())
                let empty = RequestEnvelope(id: id, type: type, deadline: deadline, trace: trace, body: Empty())
                try same(empty, try empty.encoded())
            }
            let ok = ReplyEnvelope(
                id: id, type: type, body: Notifications.Unfollow.Reply(followState: .notFollowing), error: nil)
            try same(ok, try ok.encoded())
            let failed = ReplyEnvelope<Empty>(
                id: id, type: type, body: nil,
                error: ServiceError(
                    code: "invalid_email", message: "m", status: 400,
                    fields: [FieldError(field: "email", code: "invalid_email", message: "not \"an\" email")], retryAfter: 3))
            try same(failed, try failed.encoded())
            let neither = ReplyEnvelope<Empty>(id: id, type: type, body: nil, error: nil)
            try same(neither, try neither.encoded())
            let both = ReplyEnvelope(id: id, type: type, body: Empty(), error: .notFound("x"))
            try same(both, try both.encoded())
        }
    }

    /// The hosts' direct header reader takes what the Codable decoder takes and refuses what it
    /// refuses.
    @Test func theDirectHeaderReaderAgreesWithTheDecoder() throws {
        let good = #"{"body":{},"deadline":1764439490123,"id":"c0ffee","trace":"t1","type":"auth.login","v":1}"#
        let variants = [
            good, #"{"v":1,"id":"a\"b","type":"x","deadline":-3,"trace":"","extra":[1]}"#,
            #"{"v":1,"id":"a","type":"x","deadline":1.5,"trace":"t"}"#,
            #"{"v":1,"id":"a","type":"x","deadline":1e3,"trace":"t"}"#,
            #"{"v":"1","id":"a","type":"x","deadline":1,"trace":"t"}"#, #"{"v":1,"id":7,"type":"x","deadline":1,"trace":"t"}"#,
            #"{"v":1,"type":"x","deadline":1,"trace":"t"}"#, #"{"v":1,"id":"a","type":"x","deadline":1,"trace":null}"#,
            #"{"v":1,"id":"a","type":"x","deadline":99999999999999999999,"trace":"t"}"#,
        ]
        for text in variants {
            guard case .object(let object) = try JSONParser.parse(Array(text.utf8)) else {
                Issue.record("not an object: \(text)")
                continue
            }
            let codable = try? WireJSON.decode(RequestHeader.self, from: .object(object))
            #expect(RequestHeader(object) == codable, "\(text)")
        }
        guard case .object(let object) = try JSONParser.parse(Array(good.utf8)) else { return }
        #expect(
            RequestHeader(object)
                == RequestHeader(v: 1, id: "c0ffee", type: "auth.login", deadline: 1_764_439_490_123, trace: "t1"))
    }

    @Test func mediaMessages() throws {
        func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }
        let id = String(repeating: "ab", count: 32)
        #expect(
            try json(Profile.UploadMedia.Request(ownerId: "u1", contentType: "image/jpeg"))
                == #"{"contentType":"image/jpeg","ownerId":"u1"}"#)
        #expect(
            try json(
                Profile.Media(
                    id: id, kind: "video", url: "/media/\(id)/original", thumbnailURL: "/media/\(id)/square320", width: 1920,
                    height: 1080, durationMs: 3000))
                == #"{"durationMs":3000,"height":1080,"id":"\#(id)","kind":"video","thumbnailURL":"/media/\#(id)/square320","url":"/media/\#(id)/original","width":1920}"#
        )
        #expect(
            try json(Profile.ReadMedia.Request(id: id, variant: "poster", offset: 1_048_576, length: 1_048_576))
                == #"{"id":"\#(id)","length":1048576,"offset":1048576,"variant":"poster"}"#)
        #expect(
            try json(Profile.ReadMedia.Reply(size: 12, contentType: "image/jpeg", etag: "\"\(id)-poster\""))
                == #"{"contentType":"image/jpeg","etag":"\"\#(id)-poster\"","size":12}"#)
        #expect(
            try json(
                Profile.CreateMediaPost.Request(ownerId: "u1", postType: "photo", mediaId: id, caption: nil, taggedUsernames: []))
                == #"{"mediaId":"\#(id)","ownerId":"u1","postType":"photo","taggedUsernames":[]}"#)
    }

    /// The optional `idempotencyKey` of the keyed writes: absent without a key, so an older peer
    /// reads the request as before, and a request from an older peer decodes as one without a key.
    @Test func idempotencyKeysAreOptionalMembers() throws {
        func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }
        #expect(
            try json(Profile.UploadMedia.Request(ownerId: "u1", contentType: "image/jpeg", idempotencyKey: "k-1"))
                == #"{"contentType":"image/jpeg","idempotencyKey":"k-1","ownerId":"u1"}"#)
        #expect(
            try json(Profile.AddComment.Request(userId: "u1", postId: "p1", text: "hi"))
                == #"{"postId":"p1","text":"hi","userId":"u1"}"#)
        #expect(
            try json(Profile.AddComment.Request(userId: "u1", postId: "p1", text: "hi", idempotencyKey: "k-1"))
                == #"{"idempotencyKey":"k-1","postId":"p1","text":"hi","userId":"u1"}"#)
        #expect(
            try json(
                Profile.CreatePost.Request(
                    ownerId: "u1", postType: "photo", mediaURL: "https://x.example/m.jpg",
                    thumbnailURL: "https://x.example/t.jpg",
                    caption: nil, taggedUsernames: [], idempotencyKey: "k-2"))
                == #"{"idempotencyKey":"k-2","mediaURL":"https://x.example/m.jpg","ownerId":"u1","postType":"photo","taggedUsernames":[],"thumbnailURL":"https://x.example/t.jpg"}"#
        )
        let old = try WireJSON.decode(
            Profile.CreateMediaPost.Request.self,
            from: Array(#"{"mediaId":"m","ownerId":"u1","postType":"photo","taggedUsernames":[]}"#.utf8))
        #expect(old.idempotencyKey == nil && old.mediaId == "m")
    }

    /// The actor that likes, comments and new posts carry to the live path: optional members,
    /// absent when nil, so an older peer reads the message as before, and a message from an older
    /// peer decodes as one without an actor (the gateway then looks the actor up).
    @Test func carriedActorsAreOptionalMembers() throws {
        func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }
        let alice = PublicUser(id: "u1", username: "alice", name: "Alice", bio: "", profilePhotoURL: "https://x.example/a.jpg")
        let aliceJSON =
            #"{"bio":"","id":"u1","name":"Alice","private":false,"profilePhotoURL":"https://x.example/a.jpg","username":"alice"}"#
        #expect(
            try json(Profile.PostLiked(postId: "p1", ownerId: "u2", userId: "u1", thumbnailURL: "t", postType: "photo"))
                == #"{"ownerId":"u2","postId":"p1","postType":"photo","thumbnailURL":"t","userId":"u1"}"#)
        #expect(
            try json(
                Profile.PostLiked(postId: "p1", ownerId: "u2", userId: "u1", thumbnailURL: "t", postType: "photo", user: alice))
                == #"{"ownerId":"u2","postId":"p1","postType":"photo","thumbnailURL":"t","user":\#(aliceJSON),"userId":"u1"}"#)
        #expect(
            try json(
                Profile.PostCommented(
                    postId: "p1", ownerId: "u2", userId: "u1", commentId: "c1", text: "hi", thumbnailURL: "t", user: alice))
                == #"{"commentId":"c1","ownerId":"u2","postId":"p1","text":"hi","thumbnailURL":"t","user":\#(aliceJSON),"userId":"u1"}"#
        )
        #expect(
            try json(
                Profile.PostCreated(
                    postId: "p1", ownerId: "u1", thumbnailURL: "t", taggedUserIds: [], createdAt: "c", owner: alice))
                == #"{"createdAt":"c","owner":\#(aliceJSON),"ownerId":"u1","postId":"p1","taggedUserIds":[],"thumbnailURL":"t"}"#)
        let note = Notifications.Notification(
            id: "n1", seq: 3, type: .like, detail: "photo", createdAt: "c", read: false, actorId: "u1",
            post: .init(id: "p1", thumbnailURL: "t"), followState: nil, actor: alice)
        #expect(
            try json(note)
                == #"{"actor":\#(aliceJSON),"actorId":"u1","createdAt":"c","detail":"photo","id":"n1","post":{"id":"p1","thumbnailURL":"t"},"read":false,"seq":3,"type":"like"}"#
        )
        let older = try WireJSON.decode(
            Notifications.Notification.self,
            from: Array(
                #"{"actorId":"u1","createdAt":"c","id":"n1","read":false,"seq":3,"type":"follow","followState":"following"}"#.utf8
            ))
        #expect(older.actor == nil && older.actorId == "u1")
        let olderLike = try WireJSON.decode(
            Profile.PostLiked.self, from: Array(#"{"ownerId":"u2","postId":"p1","thumbnailURL":"t","userId":"u1"}"#.utf8))
        #expect(olderLike.user == nil && olderLike.postType == nil)
    }

    @Test func eventEnvelopeAndOutboxAgree() throws {
        let body = Notifications.FollowChanged(followerId: "u1", followeeId: "u2", following: true, notifyPosts: false)
        let typed = EventEnvelope(
            producer: "notification", seq: 7, type: Notifications.FollowChanged.type, time: "2026-11-29T18:04:50.123Z", body: body
        )
        let expected =
            #"{"body":{"followeeId":"u2","followerId":"u1","following":true,"notifyPosts":false},"producer":"notification","seq":7,"time":"2026-11-29T18:04:50.123Z","type":"notification.follow.changed","v":1}"#
        #expect(String(decoding: try WireJSON.encode(typed), as: UTF8.self) == expected)
        let bodyJSON = String(decoding: try WireJSON.encode(body), as: UTF8.self)
        let built = Outbox.envelope(
            producer: "notification", seq: 7, type: Notifications.FollowChanged.type, time: "2026-11-29T18:04:50.123Z",
            body: bodyJSON)
        #expect(String(decoding: built, as: UTF8.self) == expected)
    }

    /// Builds before the wire writer wrote every object's members in sorted order; member order
    /// carries no meaning, so what they wrote reads the same.
    @Test func membersInAnyOrderReadTheSame() throws {
        let sorted =
            #"{"error":{"code":"invalid_email","fields":[{"code":"invalid_email","field":"email","message":"m"}],"message":"x","status":400},"id":"c2","type":"auth.register","v":1}"#
        let reply = try WireJSON.decode(ReplyEnvelope<Empty>.self, from: Array(sorted.utf8))
        #expect(reply.error?.fields == [FieldError(field: "email", code: "invalid_email", message: "m")])
        let event = try WireJSON.decode(
            EventEnvelope<Notifications.FollowChanged>.self,
            from: Array(
                #"{"v":1,"type":"notification.follow.changed","time":"t","seq":7,"producer":"notification","body":{"notifyPosts":false,"following":true,"followerId":"u1","followeeId":"u2"}}"#
                    .utf8))
        #expect(event.body.followerId == "u1" && event.seq == 7)
    }

    @Test func olderReaderIgnoresNewFields() throws {
        let newer =
            #"{"body":{"login":"a","password":"p","addedLater":true},"deadline":1,"id":"x","trace":"t","type":"auth.login","v":1,"priority":3}"#
        let decoded = try WireJSON.decode(RequestEnvelope<Auth.Login.Request>.self, from: Array(newer.utf8))
        #expect(decoded.body.login == "a")
    }

    @Test func timestampsAreRFC3339WithMilliseconds() {
        #expect(Timestamp.format(ms: 1_764_439_490_123) == "2025-11-29T18:04:50.123Z")
        #expect(Timestamp.format(ms: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(ms: 951_782_400_007) == "2000-02-29T00:00:00.007Z")
        #expect(Timestamp.format(ms: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func randomIDsAre32LowercaseHexDigits() {
        let ids = (0..<1_000).map { _ in RandomID.make() }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy { "0123456789abcdef".contains($0) } })
    }

    /// The header read straight from an outbox envelope equals the decoded one; anything it
    /// cannot read plainly is left to the decoder (nil).
    @Test func eventHeaderPeekAgreesWithTheDecoder() throws {
        let tricky = #"{"text":"a \",\"producer\":\"x\",\"seq\":9 b","n":1}"#
        for body in [#"{"n":1}"#, tricky, #"{"inner":{"producer":"p","seq":3,"type":"t"}}"#] {
            let envelope = Outbox.envelope(
                producer: "notification", seq: 123_456, type: "notification.created", time: "2026-12-01T02:00:00.000Z",
                body: body)
            let decoded = try WireJSON.decode(EventHeader.self, from: envelope)
            #expect(EventHeader.peek(envelope) == decoded)
        }
        let escaped = Outbox.envelope(producer: "a\"b", seq: 1, type: "t", time: "x", body: "{}")
        #expect(EventHeader.peek(escaped) == nil)
        #expect(EventHeader.peek(Array(#"{"v":1,"producer":"p","seq":1,"type":"t","time":"x","body":{}}"#.utf8)) == nil)
        #expect(EventHeader.peek(Array("not json".utf8)) == nil)
    }

    /// The bulk imports: `auth.import_users`, `auth.import_sessions` and `notification.import_follows`,
    /// and their events.
    @Test func importMessages() throws {
        func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }
        let hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"
        #expect(
            try json(
                RequestEnvelope(
                    id: "c3", type: Auth.ImportUsers.type, deadline: 1_764_439_490_123, trace: "t3",
                    body: Auth.ImportUsers.Request(
                        passwordHash: hash, users: [.init(username: "alice", email: "alice@example.com")])))
                == #"{"body":{"passwordHash":"$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g","users":[{"email":"alice@example.com","username":"alice"}]},"deadline":1764439490123,"id":"c3","trace":"t3","type":"auth.import_users","v":1}"#
        )
        #expect(
            try json(Auth.ImportUsers.Reply(users: [.init(username: "alice", id: "u1", created: true)]))
                == #"{"users":[{"created":true,"id":"u1","username":"alice"}]}"#)
        #expect(
            try json(
                Auth.UsersImported(
                    identities: [Identity(id: "u1", username: "alice", email: "alice@example.com", version: 1)]))
                == #"{"identities":[{"email":"alice@example.com","id":"u1","username":"alice","version":1}]}"#)
        #expect(Auth.UsersImported.type == "auth.users.imported")
        #expect(
            try json(Notifications.ImportFollows.Request(followeeId: "u0", followerIds: ["u1", "u2"], notifyPosts: true))
                == #"{"followeeId":"u0","followerIds":["u1","u2"],"notifyPosts":true}"#)
        #expect(Notifications.ImportFollows.type == "notification.import_follows")
        #expect(try json(Notifications.ImportFollows.Reply(created: 2)) == #"{"created":2}"#)
        #expect(
            try json(Notifications.FollowsImported(followeeId: "u0", followerIds: ["u1"], notifyPosts: false))
                == #"{"followeeId":"u0","followerIds":["u1"],"notifyPosts":false}"#)
        #expect(Notifications.FollowsImported.type == "notification.follows.imported")
        #expect(Auth.ImportSessions.type == "auth.import_sessions" && !Auth.ImportSessions.isIdempotent)
        #expect(try json(Auth.ImportSessions.Request(userIds: ["u1", "u2"])) == #"{"userIds":["u1","u2"]}"#)
        #expect(
            try json(
                Auth.ImportSessions.Reply(sessions: [
                    .init(
                        identity: Identity(id: "u1", username: "alice", email: "alice@example.com", version: 1),
                        session: .init(token: "t", sessionId: "s1", expiresAt: "2026-12-31T00:00:00.000Z"))
                ]))
                == #"{"sessions":[{"identity":{"email":"alice@example.com","id":"u1","username":"alice","version":1},"session":{"expiresAt":"2026-12-31T00:00:00.000Z","sessionId":"s1","token":"t"}}]}"#
        )
    }
}
