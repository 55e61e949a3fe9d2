"""Sessions: which session a message belongs to, its transcript on disk, and what is kept when it ends."""
