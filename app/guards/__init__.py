"""Guards: the one outbound HTTP client, the JavaScript sandbox, and users' encrypted credentials."""
