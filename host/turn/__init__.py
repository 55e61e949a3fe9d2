"""A turn: the model-and-tools loop for one event, with its context, compaction, memory flush and budget."""
