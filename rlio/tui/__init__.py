"""``rlio top``: a live terminal dashboard of runs, on Textual (the ``rlio[tui]`` extra).

The package splits what is read from what is drawn: ``feeds`` reads runs (tails, samples,
followers, status, findings) on background threads with no Textual import; ``group_stats``
lays out ``rlio.outcome``'s GRPO numbers as rows; ``braille`` and ``chat_text`` draw plots and
transcripts as text; ``dashboard`` and ``screens`` are the Textual application. Nothing here
writes to a run.
"""
