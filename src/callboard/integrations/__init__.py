"""What Callboard puts into each coding agent CLI's own settings so the mailbox reaches its
sessions, and how it takes it out again."""
