"""Where the bytes come from: run folders, manifests, and read-only file access."""
