"""Tables: find and redact PII in CSV, TSV, JSON records and Parquet, column by column.

`formats` reads and writes each kind of table in batches of rows, `columns` decides what each column holds from a
sample (one PII type, free text, or nothing), and `redact` applies the decisions cell by cell, reading each cell
with its column's name as context. `piiner-redact people.csv -o out.csv` is the command.
"""

from .columns import ColumnDecision, ColumnReport, analyse_columns
from .redact import TableError, redact_table

__all__ = ["ColumnDecision", "ColumnReport", "TableError", "analyse_columns", "redact_table"]
