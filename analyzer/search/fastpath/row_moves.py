"""What the fast path's kernel cache (``kernel_cache``) does to a cached kernel row that depends on
the runtime group it is lowered in: the class moves ``lowering`` makes (``simt``) and the bytes a
fused kernel saves (``saved_bytes``), as the full lowering computes them."""

from __future__ import annotations

from analyzer.prediction import engines, fusion_bytes, row_kernels, stem_conv, xla_gpu_classes, xla_gpu_rewrites


def simt(g, row: tuple, infos: list) -> tuple:
    """``row`` with its class moved as ``lowering`` moves it in ``g`` (a ``kernel_cache._Group``): ``engines.simt_classes`` (the Winograd shape
    from the heaviest member's learned flag, ``infos``: its members' node data), ``stem_conv.stem_classes`` (its
    learned stem flag), ``xla_gpu_classes.xla_classes``
    (member part 7: each member's op class), then ``row_kernels.row_class``."""
    if g.fold and g.policy == "xla" and any(d[10][0] == "gemv" for d in infos):   # (``xla_gpu_rewrites.strength_rows``)
        row = xla_gpu_rewrites.as_reduce(row)
    code = row[6]
    anchor = max(infos, key=lambda d: d[2][0])   # (member part 0: MAC FLOPs)
    if g.simt:
        code = engines.simt_code(code, row[8], lambda: anchor[5])
    if g.stem:
        code = stem_conv.stem_code(code, row[8], lambda: anchor[16])
    if g.xla:
        code = xla_gpu_classes.xla_code(code, [d[2][7] for d in infos])
    if g.rows:
        code = row_kernels.row_class(code, row_kernels.kernel_row([d[13] for d in infos])[0], g.rows)
    return row if code == row[6] else row[:6] + (code,) + row[7:]


def saved_bytes(nodes, data, members, get, outputs=()) -> dict[int, int]:
    """{kernel position: the bytes it saves} for the kernels of more than one member, as
    ``fusion_bytes.saved`` counts them (``get``: tensor -> [its fusible producer, its readers...],
    or [-1 - v, its readers...] for the output of a view ``v`` that launches nothing, as
    ``kernel_cache.KernelRows._plan`` built it; ``outputs``: the graph's output names, always written)."""

    def io(i):
        nd = nodes[i]
        return nd.inputs, nd.outputs, data[i][3], data[i][4], nd.op

    def readers(t):
        e = get(t)
        return e[1:] if e is not None else ()

    def source(t):
        e = get(t)
        return None if e is None else (e[0] if e[0] >= 0 else -1 - e[0])

    alias = lambda u: data[u][6]   # noqa: E731  (members launch: never a view looked through)
    is_output = outputs.__contains__
    return {j: fusion_bytes.saved(m, io, alias, readers, source, is_output)
            for j, m in enumerate(members) if len(m) > 1}
