"""Poetry analysis shared by every stage: rhyme and metre detection, scheme and style tokens."""
