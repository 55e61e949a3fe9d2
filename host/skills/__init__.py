"""Skills: the catalog found on disk, the tool that reads them, and slash words that invoke them or prompts."""
