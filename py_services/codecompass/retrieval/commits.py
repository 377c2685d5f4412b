"""Lance commits that replace rows in one version: new rows written as data files no version
references yet, then one commit that adds them and deletes the rows they replace, found by a
filter and deleted by their row addresses.

LanceDB's `merge_insert(...).when_not_matched_by_source_delete(...)` does the same in one call
but joins the whole table on its key first: 34 ms for an edit's rows on ws-300k's chunk table
against 13 this way, and 6.8 ms for one catalog row against ~3. A reader sees the table before
or after, never the old rows gone without the new ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import lance
import pyarrow as pa
from lance.fragment import FragmentMetadata, write_fragments


def write_uncommitted(data: pa.Table, dataset: lance.LanceDataset) -> tuple[FragmentMetadata, ...]:
    """Data files for `data` in `dataset`'s folder, in its file format, referenced by no
    version yet. The dataset object carries the connection's storage options (credentials,
    endpoint), so they are never copied here."""
    return tuple(write_fragments(data, dataset, mode="append", data_storage_version=dataset.data_storage_version))


def matching_rows(dataset: lance.LanceDataset, filters: Iterable[str], columns: Sequence[str] = ()) -> pa.Table:
    """The `columns` and row address (`_rowaddr`) of every row any of `filters` matches."""
    found = ([dataset.to_table(columns=list(columns), filter=where, with_row_address=True) for where in filters]
             if dataset.count_rows() > 0 else [])
    return pa.concat_tables(found) if found else pa.table({"_rowaddr": pa.array([], pa.uint64())})


def replacing(
    dataset: lance.LanceDataset, addresses: Iterable[int], new: Iterable[FragmentMetadata]
) -> lance.LanceOperation.BaseOperation | None:
    """One operation that adds the fragments `new` and deletes the rows at `addresses` (a plain
    Append when there are none); None when there is nothing to do."""
    new = list(new)
    stale: dict[int, set[int]] = {}
    for address in addresses:
        # A row address is the fragment id in its upper 32 bits.
        stale.setdefault(address >> 32, set()).add(address)
    if not stale:
        return lance.LanceOperation.Append(new) if new else None
    updated: list[FragmentMetadata] = []
    removed: list[int] = []
    for fragment_id, rows in sorted(stale.items()):
        fragment = dataset.get_fragment(fragment_id)
        assert fragment is not None, "the id comes from a row address the dataset just returned"
        kept = fragment.delete(f"_rowaddr IN ({', '.join(map(str, sorted(rows)))})")
        if kept is None:
            removed.append(fragment_id)
        else:
            updated.append(kept)
    return lance.LanceOperation.Update(removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new)


def commit(dataset: lance.LanceDataset, operation: lance.LanceOperation.BaseOperation | None
           ) -> lance.LanceDataset | None:
    """Commit `operation` on the version `dataset` reads: the new version, None when there is no
    operation."""
    if operation is None:
        return None
    return lance.LanceDataset.commit(dataset, operation, read_version=dataset.version)


def commit_replacing(dataset: lance.LanceDataset, filters: Iterable[str],
                     new: Iterable[FragmentMetadata]) -> bool:
    """Add the fragments `new` and delete every row any of `filters` matches, in one commit on
    the version `dataset` reads; False when there was nothing to do."""
    addresses = matching_rows(dataset, filters).column("_rowaddr").to_pylist()
    return commit(dataset, replacing(dataset, addresses, new)) is not None
