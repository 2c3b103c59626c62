"""Reading other tools' rule and memory files into knowledge drafts (pure parsing; no database).

`formats.detect` names a file's format, `markdown.parse_rules` splits a rule file into rules, `memory.parse_jsonl`
reads the MCP memory server's JSONL, `ours.parse_export` reads our own JSON export. The import service
(`knowledge.services.imports`) decides what is stored."""
