"""What model calls cost: prices by provider and model, and the calls recorded in the transcripts of a home."""
