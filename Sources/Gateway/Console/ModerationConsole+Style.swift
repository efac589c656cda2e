extension ModerationConsole {
    /// `GET /moderation/console.css`.
    static let style = #"""
        :root { color-scheme: light dark; font-family: system-ui, -apple-system, sans-serif; }
        body { margin: 0; }
        [hidden] { display: none !important; }
        header { display: flex; align-items: center; gap: 1rem; padding: 0.75rem 1.5rem; border-bottom: 1px solid #8884; }
        header h1 { font-size: 1.25rem; margin: 0; flex: 1; }
        main { max-width: 60rem; margin: 0 auto; padding: 1rem 1.5rem; }
        form#sign-in { display: grid; gap: 0.5rem; max-width: 20rem; }
        input, textarea { font: inherit; padding: 0.4rem; }
        button { font: inherit; padding: 0.35rem 0.8rem; cursor: pointer; }
        button:disabled { cursor: wait; opacity: 0.6; }
        .toolbar { display: flex; align-items: center; justify-content: space-between; }
        ol#reports { list-style: none; padding: 0; display: grid; gap: 1rem; }
        li.report { border: 1px solid #8886; border-radius: 0.5rem; padding: 0.75rem 1rem; }
        .report-head { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: baseline; font-size: 0.9rem; }
        .report-head .type { font-weight: 600; text-transform: uppercase; }
        .report-head .reason { padding: 0.05rem 0.5rem; border-radius: 1rem; background: #c333; }
        .report-head .count { font-weight: 600; }
        .report-head time { margin-left: auto; opacity: 0.7; }
        dl.snapshot { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0.75rem 0; }
        dl.snapshot dt { opacity: 0.7; }
        dl.snapshot dd { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
        blockquote.comment { margin: 0.5rem 0; padding-left: 0.75rem; border-left: 3px solid #8888; white-space: pre-wrap;
          overflow-wrap: anywhere; }
        .reporter { font-size: 0.85rem; opacity: 0.8; }
        .actions { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin-top: 0.75rem; }
        .actions input { flex: 1; min-width: 12rem; }
        #status { min-height: 1.5rem; }
        #status.error { color: #c00; }
        """#
}
