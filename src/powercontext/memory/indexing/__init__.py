"""Write-time indexing: what the channels store for an entry (templates, neighbouring entries
of its thread, vectors). Query-time stages live in `memory.search`."""
