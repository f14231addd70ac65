"""The parts of recipes/multi30k_ende.py (imported as `multi30k` with recipes/ on
sys.path, as when the script runs): `layout` (the problems and files), `commands`
(the t2t-lite commands it runs), `preparation` (the data: raw, or prepared as
Multi30k's tok files), `marks` (the checkpoints of each mark, an early stop) and
`results` (a mark's scores and the table)."""
