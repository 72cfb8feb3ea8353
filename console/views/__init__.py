"""The owner console's pages. Thin views: resolve the member's workspace (console.access), parse,
call one selector or service, render."""
