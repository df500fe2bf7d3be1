"""The HTML report: one self-contained offline file (plotly's JS embedded once).

Formatting only: the headline, profiles side by side, a roofline chart (one point per layer at
its intensity and attained FLOP/s, one roof per profile; ``Prediction.roofline``), per-layer
time stacked by bound, op-type and module rollups (``analyzer.report.rollups``), a sortable,
filterable layer table (vanilla JS; cells are set with ``textContent``), and the baseline diff.

Names are data: text placed in the page goes through ``html.escape(safe.text(...))``; the data
of the table is JSON inside ``<script type="application/json">`` with ``<``, ``>`` and ``&``
escaped, so no name can close a tag.  ``window.onerror`` writes any script error into the
page (``data-js-error`` on ``<html>``), which the browser test reads.
"""

from __future__ import annotations

import html as _html
import json

from analyzer.render import names as fit_names
from analyzer.render import safe
from analyzer.render.pieces import comparison_lines, estimates_line, human, shorten  # noqa: F401
from analyzer.render.headline import (caveat, detail_lines, human_time, provenance_word,
                                      shared_notes, short_caveat)
from analyzer.report import rollups

STACK_LAYERS = 40
ROLLUP_ROWS = 20
LABEL_CHARS = 48   # a chart's category label at most (the full name is on hover)
BOUND_COLORS = {"compute": "#d62728", "memory": "#1f77b4", "overhead": "#7f7f7f"}
# one colour per profile, its roof and its points alike (plotly's qualitative "Plotly" set)
PROFILE_COLORS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692",
                  "#b6e880", "#ff97ff", "#fecb52")


def esc(s) -> str:
    return _html.escape(safe.text(s), quote=True)


def _json(doc) -> str:
    return (json.dumps(doc, separators=(",", ":"), allow_nan=False)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _human(n, unit=""):

    return human(n, unit)


def roofline_figure(report, indices=None):
    import plotly.graph_objects as go

    from analyzer.render.roofline import roofline_series

    fig = go.Figure()
    hws = list(dict.fromkeys(s["hardware"] for s in roofline_series(report, indices)))
    for s in roofline_series(report, indices):
        color = PROFILE_COLORS[hws.index(s["hardware"]) % len(PROFILE_COLORS)]
        if s["kind"] == "roof":
            fig.add_trace(go.Scatter(x=s["x"], y=s["y"], mode="lines", name=esc(s["label"]),
                                     hoverinfo="skip", line={"color": color},
                                     legendgroup=s["hardware"]))
        else:
            text = [f"{_html.escape(n)} ({_html.escape(o)})<br>held to {r / 1e12:.3g} TFLOP/s by its terms"
                    for n, o, r in zip(s["names"], s["ops"], s["roof"])]
            cls = go.Scattergl if len(s["x"]) > 2000 else go.Scatter
            fig.add_trace(cls(x=s["x"], y=s["y"], mode="markers", name=esc(s["label"]),
                              legendgroup=s["hardware"],
                              text=text, marker={"size": 6, "opacity": 0.7, "color": color},
                              hovertemplate="%{text}<br>%{x:.3g} FLOP/B<br>%{y:.3s}FLOP/s"
                                            "<extra>" + esc(s["hardware"]) + "</extra>"))
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOP/byte)")
    fig.update_yaxes(type="log", title="attained (FLOP/s)")
    fig.update_layout(title="Roofline: one point per layer, one roof per profile", height=520,
                      margin={"t": 50, "l": 60, "r": 20, "b": 50})
    return fig


def write_figure(fig, path: str) -> None:
    fig.write_html(path, include_plotlyjs=True, full_html=True)


def chart_labels(names: list[str], width: int = LABEL_CHARS) -> tuple[str, list[str]]:
    """(the prefix every name shares, each name without it fitted to ``width``): unique
    category labels (``names.fit``; a plotly axis merges equal categories into one bar)."""
    prefix = fit_names.shared_prefix(names)
    return prefix, _unique(fit_names.fit([n[len(prefix):] for n in names], width))


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique by a count (only a cut too narrow for one component repeats one)."""
    seen: dict[str, int] = {}
    out = []
    for x in labels:
        seen[x] = seen.get(x, 0) + 1
        out.append(x if seen[x] == 1 else f"{x} ({seen[x]})")
    return out


def _bar_height(rows: int) -> int:
    return max(320, 22 * rows + 140)


def _left_margin(labels: list[str]) -> int:
    return min(420, 40 + 7 * max((len(x) for x in labels), default=10))


def stack_figure(report, rows):
    """The heaviest layers' time on the first profile, a horizontal bar per layer (names read
    across), stacked by bound; labels unique, the full name on hover."""
    import plotly.graph_objects as go

    p = report.predictions[0]
    rows = [r for r in rows if r[1][0] is not None][:STACK_LAYERS]
    full = [safe.text(n.name) for n, _ in rows]
    prefix, labels = chart_labels(full)
    labels = [_html.escape(x) for x in labels]
    hover = [_html.escape(x) for x in full]
    fig = go.Figure()
    for b, color in BOUND_COLORS.items():
        fig.add_trace(go.Bar(y=labels, x=[xs[0].time_s if xs[0].bound == b else 0 for _, xs in rows],
                             orientation="h", name=f"{b}-bound", marker_color=color,
                             customdata=hover,
                             hovertemplate="%{customdata}: %{x:.3s}s<extra>" + b + "</extra>"))
    under = f" (names under {esc(prefix)})" if prefix else ""
    fig.update_layout(barmode="stack", height=_bar_height(len(rows)), xaxis_title="predicted time (s)",
                      yaxis={"autorange": "reversed", "type": "category"},
                      title=f"Heaviest {len(rows)} layers on {esc(p.hardware)}, by bound{under}",
                      margin={"t": 50, "l": _left_margin(labels), "r": 20, "b": 50})
    return fig


def _rollup_figure(report, groups, what):
    import plotly.graph_objects as go

    groups = groups[:ROLLUP_ROWS]
    full = [safe.text(g.name) + (f" x{g.blocks}" if g.blocks > 1 else "") for g in groups]
    labels = [_html.escape(x) for x in _unique(fit_names.fit(full, LABEL_CHARS))]
    hover = [_html.escape(x) for x in full]
    fig = go.Figure()
    if report.predictions:
        for i, p in enumerate(report.predictions):
            fig.add_trace(go.Bar(y=labels, x=[g.time_s[i] for g in groups], orientation="h",
                                 name=esc(p.hardware), customdata=hover,
                                 marker_color=PROFILE_COLORS[i % len(PROFILE_COLORS)],
                                 hovertemplate="%{customdata}: %{x:.3s}s"))
        xt = "predicted time (s)"
    else:
        fig.add_trace(go.Bar(y=labels, x=[g.flops for g in groups], orientation="h", name="FLOPs",
                             customdata=hover, hovertemplate="%{customdata}: %{x:.3s}"))
        xt = "FLOPs"
    fig.update_layout(title=f"By {what}", height=max(300, 24 * len(groups) + 120), xaxis_title=xt,
                      yaxis={"autorange": "reversed", "type": "category"},
                      margin={"t": 50, "l": _left_margin(labels), "r": 20, "b": 50})
    return fig


def _div(fig, div_id: str) -> str:
    return fig.to_html(include_plotlyjs=False, full_html=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


def _headline(report) -> str:
    m, t = report.model, report.totals
    out = [f"<h1>opcost: {esc(m.get('path', ''))}</h1>", "<table class='kv'>"]
    ins = m.get("inputs") or {}
    if ins:
        out.append("<tr><th>inputs</th><td>" + esc(", ".join(
            f"{k}={'x'.join(map(str, v or ())) or 'scalar'}" for k, v in ins.items())) + "</td></tr>")
    out += [f"<tr><th>params</th><td>{_human(t.params)} ({t.params:,})</td></tr>",
            f"<tr><th>FLOPs</th><td>{_human(t.flops, 'FLOP')} (MAC {_human(t.mac_flops)}, vector "
            f"{_human(t.vector_flops)}, transc. {_human(t.transcendentals)})</td></tr>",
            f"<tr><th>bytes</th><td>{_human(t.bytes_moved, 'B')} (weights {_human(t.weight_bytes, 'B')}, "
            f"act. in {_human(t.activation_bytes_read, 'B')}, out "
            f"{_human(t.activation_bytes_written, 'B')})</td></tr>",
            f"<tr><th>coverage</th><td>{esc(report.coverage.line())}</td></tr></table>"]
    if report.predictions:
        out.append("<h2>Profiles side by side</h2><table class='grid'><tr><th></th>"
                   + "".join(f"<th>{esc(p.hardware)}</th>" for p in report.predictions) + "</tr>")
        rows = [("latency", lambda p: f"<b>{human_time(p.latency_s)}</b>"),
                ("precision", lambda p: esc(p.precision)),
                ("bound shares", lambda p: esc(", ".join(f"{b} {100 * s:.0f}%"
                                                         for b, s in p.bound_share.items() if s > 0))),
                ("kernels", lambda p: str(p.kernels) + (f" (+{p.host_ops} host-only ops)"
                                                         if p.host_ops else "")),
                ("runtime", lambda p: esc(p.runtime)),
                ("constants", lambda p: f"<span title='{esc(p.provenance_detail)}'>"
                                        f"{esc(provenance_word(p))}</span>"),
                ("notes", lambda p: ", ".join(f"[{k}]" for k in per[index[id(p)]]) or "—"),
                ("details", lambda p: "<details><summary>in full</summary>"
                                      + "<br>".join(esc(x) for x in detail_lines(p))
                                      + "</details>")]
        notes, per = shared_notes(report.predictions)
        index = {id(p): i for i, p in enumerate(report.predictions)}
        for label, f in rows:
            out.append(f"<tr><th>{label}</th>" + "".join(f"<td>{f(p)}</td>" for p in report.predictions)
                       + "</tr>")
        out.append("</table>")
        if notes:
            out.append("<ol class='notes'>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ol>")
        c = caveat(report.predictions)
        if c:
            out.append(f"<p class='warn' title='{esc(c)}'>{esc(short_caveat(report.predictions))}"
                       f" (hover for which)</p>")
    for w in report.warnings:
        out.append(f"<p class='warn'>warning: {esc(w)}</p>")
    return "\n".join(out)


def _baseline(report) -> str:
    c = report.comparison
    if c is None:
        return ""

    out = [f"<h2>Baseline {esc(c.baseline_path)}: "
           + ("<span class='bad'>predicted latency regressed</span>" if c.failed
              else "no regression beyond the limit") + "</h2><ul>"]
    for head, details in comparison_lines(c):
        out.append(f"<li>{esc(head)}<ul>" + "".join(f"<li>grew: {esc(d)}</li>" for d in details)
                   + "</ul></li>")
    out += [f"<li>note: {esc(x)}</li>" for x in c.notes]
    return "\n".join(out) + "</ul>"


def _sensitivity(report, top: int | None, hints: dict | None = None) -> str:
    """What to shrink (per profile) and what hardware would help, as plain tables."""
    if report.sensitivity is None:
        return ""
    from analyzer.render import whatif

    out = []
    for p in report.sensitivity.profiles:
        rows = whatif.shrink_rows(p, top or whatif.TOP_DEFAULT)
        out.append(f"<h2>{esc(whatif.shrink_title(p, len(rows)))}</h2><table class='grid'><tr>"
                   + "".join(f"<th>{esc(h)}</th>" for h in whatif.HEADER) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows]
        more = whatif.more_rows_line(p, len(rows), hints)
        out.append("</table>" + (f"<p>{esc(more)}</p>" if more else "") + f"<p>{esc(whatif.hardware_line(p))}</p>")
    return "\n".join(out)


def _table_data(report, rows) -> dict:
    preds = report.predictions
    cols = ["layer", "op"]
    for p in preds:
        h = safe.text(p.hardware)
        cols += [f"time {h}" if len(preds) > 1 else "time", f"bound {h}" if len(preds) > 1 else "bound",
                 f"share {h}" if len(preds) > 1 else "share"]
    cols += ["FLOPs", "bytes", "params"]
    data = []
    for n, xs in rows:
        r = [safe.text(n.name), safe.text(n.op)]
        for x in xs:
            r += ([x.time_s, x.bound, x.share] if x is not None else [None, "", None])
        r += [n.cost.flops, n.cost.bytes_moved, n.cost.params]
        data.append(r)
    kinds = ["text", "text"] + ["time", "text", "pct"] * len(preds) + ["num", "num", "num"]
    return {"columns": cols, "kinds": kinds, "rows": data}


_CSS = """body{font:14px system-ui,sans-serif;margin:24px;max-width:1400px;color:#222}
table{border-collapse:collapse}th,td{padding:3px 8px;text-align:left;vertical-align:top}
table.grid td,table.grid th{border:1px solid #ddd}table.kv th{color:#555}
.warn{color:#a15c00}.bad{color:#c00}#layers th{cursor:pointer;background:#f3f3f3;position:sticky;top:0}
#layers td.n{text-align:right;font-variant-numeric:tabular-nums}#layers tr:nth-child(even){background:#fafafa}
#filter{padding:4px;width:320px}"""

_JS = """(function(){var d=JSON.parse(document.getElementById('layer-data').textContent);
var t=document.getElementById('layers'),f=document.getElementById('filter'),info=document.getElementById('layer-info');
var MAX=1000,sortCol=-1,asc=false,rows=d.rows.slice();
function si(x,u){if(x===null||x===undefined)return'-';if(x===0)return'0'+(u?' '+u:'');var p=['','K','M','G','T','P','E'],i=0;while(Math.abs(x)>=1000&&i<6){x/=1000;i++;}
return(i?x.toPrecision(3):String(x))+' '+p[i]+u;}
function tm(s){if(s===null)return'-';if(s>=1)return s.toPrecision(3)+' s';if(s>=1e-3)return(s*1e3).toPrecision(3)+' ms';if(s>=1e-6)return(s*1e6).toPrecision(3)+' \\u00b5s';return(s*1e9).toPrecision(3)+' ns';}
function cell(v,k,c){if(k==='time')return tm(v);if(k==='pct')return v===null?'-':(100*v).toFixed(1)+'%';
if(k==='num')return si(v,d.columns[c]==='bytes'?'B':'');return v;}
function draw(){var q=f.value.toLowerCase(),shown=0,total=0;var body=document.createElement('tbody');
for(var i=0;i<rows.length;i++){var r=rows[i];if(q&&(r[0]+' '+r[1]).toLowerCase().indexOf(q)<0)continue;total++;
if(shown>=MAX)continue;shown++;var tr=document.createElement('tr');
for(var c=0;c<r.length;c++){var td=document.createElement('td');td.textContent=cell(r[c],d.kinds[c],c);
if(d.kinds[c]!=='text')td.className='n';tr.appendChild(td);}body.appendChild(tr);}
var old=t.tBodies[0];if(old)t.removeChild(old);t.appendChild(body);
info.textContent=total+' matching layers'+(total>shown?' (first '+shown+' shown; filter to narrow)':'');}
var head=document.createElement('thead'),hr=document.createElement('tr');
d.columns.forEach(function(name,c){var th=document.createElement('th');th.textContent=name;th.title='sort';
th.onclick=function(){asc=(sortCol===c)?!asc:(d.kinds[c]==='text');sortCol=c;
rows.sort(function(a,b){var x=a[c],y=b[c];if(x===y)return 0;if(x===null)return 1;if(y===null)return -1;return(x<y?-1:1)*(asc?1:-1);});draw();};
hr.appendChild(th);});head.appendChild(hr);t.appendChild(head);f.oninput=draw;draw();
document.documentElement.setAttribute('data-table-ready',String(d.rows.length));})();"""


def render_html(report, *, top: int | None = None, all_rows: bool = False, hints: dict | None = None) -> str:
    """One offline page: headline, roofline, rollups and the layer table (``top``: the heaviest,
    the title counting the rest and saying how to show them: ``hints``, as the terminal view's)."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        from analyzer.errors import InputSpecError

        raise InputSpecError("the html report needs plotly: pip install 'opcost[plot]'") from None
    all_runtime = rollups.runtime_rows(report)
    rows = rollups.top_rows(report, None if all_rows or top is None else top, all_runtime)
    parts = [_headline(report), _baseline(report)]
    if report.predictions:
        idx = None if len(rows) == len(all_runtime) else \
            {x.index for _, xs in rows for x in xs if x is not None}
        parts += ["<h2>Roofline</h2>", _div(roofline_figure(report, idx), "roofline"),
                  "<h2>Per-layer time by bound</h2>", _div(stack_figure(report, rows), "stack")]
    parts.append(_sensitivity(report, top, hints))
    parts += ["<h2>Rollups</h2>", _div(_rollup_figure(report, rollups.by_op(report, all_runtime), "op type"), "by-op"),
              _div(_rollup_figure(report, rollups.by_module(report, all_runtime),
                                  "module (repeated blocks folded)"), "by-module")]
    what, more = f"all {len(rows)}", ""
    if len(rows) < len(all_runtime):
        from analyzer.render.pieces import more_line
        from analyzer.render.pieces import HINTS

        h = {**HINTS, **(hints or {})}
        what = f"top {len(rows)} of {len(all_runtime)}"
        more = "<p>" + esc(more_line(len(all_runtime) - len(rows), "layer",
                                     f"{h['top'].format(n=len(all_runtime))} or {h['all']}")) + "</p>"
    parts += [f"<h2>Layers ({what})</h2>", *([more] if more else []),
              "<input id='filter' placeholder='filter by layer or op name'> <span id='layer-info'></span>",
              "<table id='layers'></table>",
              f"<script type='application/json' id='layer-data'>{_json(_table_data(report, rows))}</script>",
              f"<script>{_JS}</script>"]
    title = esc(f"opcost: {report.model.get('path', '')}")
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{title}</title><style>{_CSS}</style>"
            "<script>window.onerror=function(m,s,l){document.documentElement.setAttribute("
            "'data-js-error',String(m)+' at '+l);};</script>"
            f"<script>{get_plotlyjs()}</script></head><body>\n" + "\n".join(parts)
            + "\n</body></html>\n")
