"""Every env dialect a GPU job is started with: one module per dialect under dialects/ (its names,
file names, detection, writer and reader), found by the registry there; write.py renders, read.py
reads back (detect.py says which dialect a file is in)."""
