extension ModerationConsole {
    /// `GET /moderation`: the page; nothing in it comes from a user.
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>Moderation</title>
        <link rel="stylesheet" href="/moderation/console.css">
        <script src="/moderation/console.js" defer></script>
        </head>
        <body>
        <header>
          <h1>Moderation</h1>
          <span id="who"></span>
          <button id="sign-out" type="button" hidden>Sign out</button>
        </header>
        <main>
          <form id="sign-in" autocomplete="on">
            <h2>Sign in</h2>
            <label for="login">Username or email</label>
            <input id="login" name="login" autocomplete="username" required>
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required>
            <button id="sign-in-button" type="submit">Sign in</button>
          </form>
          <section id="queue" hidden>
            <div class="toolbar">
              <h2>Open reports</h2>
              <button id="refresh" type="button">Refresh</button>
            </div>
            <p id="empty" hidden>No open reports.</p>
            <ol id="reports"></ol>
            <button id="more" type="button" hidden>Load more</button>
          </section>
          <p id="status" role="status" aria-live="polite"></p>
        </main>
        </body>
        </html>
        """#
}
