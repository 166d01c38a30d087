"""Chat: conversations and their transcript, sending a turn, the SSE stream, sharing, approvals, compaction
around a reply, and purging a conversation or a user's data.
"""
