"""A run: the sweep session, cases, levels, the engine, the journal, results, shards, repro and the doctor."""
