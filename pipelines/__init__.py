"""Apache Beam jobs that turn raw text into tfnlp's vocabulary and training data."""
