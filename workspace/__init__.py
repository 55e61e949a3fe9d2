"""Default persona files, copied into a new home by `hermitcrab init`."""
