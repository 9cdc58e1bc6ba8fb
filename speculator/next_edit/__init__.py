"""Next-edit suggestions: the edit that most likely follows the user's recent ones.

core.py runs a request (prepare -> an engine's rewrite -> finish); window.py picks
the lines to rewrite and shows recent edits as hunks; draft.py carries the last edit
to the window's other lines (the draft speculation copies); prompts.py holds the
prompt formats; rejoin.py ends the rewrite once it holds a change that could be
proposed; proposal.py turns the rewrite into at most one confident edit. The
engines generate through Pipeline.next_edit (speculator/pipeline.py); the fake one
proposes its draft. docs/next-edit.md has the figures.
"""
