// attntrace's page: draws the payload that attntrace wrote into this file as tables, colours
// their cells, and on hover or focus shows a cell's arithmetic and marks the cells it came from.
// It computes no number: every number and every line of arithmetic is attntrace's own text.
// #cell=M,R,C in the address focuses cell (R, C) of matrix M when the page opens.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("attntrace-data").textContent);
  const PAGE = 32;  // rows and columns of a page of a large matrix
  const main = document.createElement("main");
  const aside = document.createElement("aside");
  aside.id = "cell";
  aside.setAttribute("aria-live", "polite");
  aside.innerHTML = "<p class=\"muted\">Point at a cell, or move to it with Tab, to see its arithmetic.</p>";
  document.body.append(main, aside);
  document.title = data.title;

  function element(tag, attributes, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Viridis, from its published control points; and purple (−) to white to orange (+).
  const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
    [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
  const DIVERGING = [[84, 39, 136], [153, 142, 195], [247, 247, 247], [241, 163, 64], [179, 88, 6]];
  function along(stops, t) {
    const x = Math.min(Math.max(t, 0), 1) * (stops.length - 1);
    const i = Math.min(Math.floor(x), stops.length - 2), f = x - i;
    return stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  }
  function colour(m, value) {
    if (!isFinite(value)) return null;
    if (m.scale === "unit") return along(VIRIDIS, value);
    return along(DIVERGING, m.limit > 0 ? (value / m.limit + 1) / 2 : 0.5);
  }
  function paint(td, rgb) {
    td.style.background = `rgb(${rgb[0]}, ${rgb[1]}, ${rgb[2]})`;
    const light = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
    td.style.color = light > 140 ? "#111" : "#fff";
  }
  function legend(m) {
    const p = element("p", {class: "legend"});
    const bar = element("span", {class: "bar", "aria-hidden": "true"});
    const stops = m.scale === "unit" ? VIRIDIS : DIVERGING;
    bar.style.background = "linear-gradient(to right, " + stops.map(c => `rgb(${c})`).join(", ") + ")";
    if (m.scale === "unit") {
      p.append("Colour: 0", bar, "1, one absolute scale for every table of weights.");
    } else {
      const l = m.limit.toPrecision(3);
      p.append(`Colour: −${l}`, bar, `${l}, this table's largest magnitude; 0 is white.`);
    }
    return p;
  }

  // The matrices' cells, split once; each section's page of rows and columns.
  const matrices = data.matrices || [];
  for (const m of matrices) m.values = m.cells === "" ? [] : m.cells.split(" ");
  const sections = [];
  function label(m, r, c) { return `${m.name}${m.head ? " · head " + m.head : ""}[${m.rows[r]}, ${m.cols[c]}]`; }

  function drawTable(i) {
    const m = matrices[i], s = sections[i];
    const rows = m.shape[0], cols = m.shape[1];
    const r1 = Math.min(rows, s.row + PAGE), c1 = Math.min(cols, s.col + PAGE);
    const table = element("table", {class: "heat", "data-matrix": i});
    table.append(element("caption", {class: "visually-hidden"}, `${m.name}${m.head ? ", head " + m.head : ""}: rows ${s.row + 1} to ${r1}, columns ${s.col + 1} to ${c1}`));
    const head = element("tr");
    head.append(element("th", {scope: "col"}, ""));
    for (let c = s.col; c < c1; c++) head.append(element("th", {scope: "col"}, m.cols[c]));
    table.append(element("thead"));
    table.tHead.append(head);
    const body = table.appendChild(element("tbody"));
    for (let r = s.row; r < r1; r++) {
      const tr = body.appendChild(element("tr"));
      tr.append(element("th", {scope: "row"}, m.rows[r]));
      for (let c = s.col; c < c1; c++) {
        const k = r * cols + c, text = m.values[k];
        const td = element("td", {tabindex: "0", "data-r": r, "data-c": c}, text);
        if (m.hidden && m.hidden[k] === "1") td.className = "hidden-cell";
        else { const rgb = colour(m, Number(text)); if (rgb) paint(td, rgb); }
        tr.append(td);
      }
    }
    s.holder.replaceChildren(table);
    if (s.pager) {
      s.pager.rows.textContent = `rows ${s.row + 1}–${r1} of ${rows}`;
      s.pager.cols.textContent = `columns ${s.col + 1}–${c1} of ${cols}`;
    }
  }

  function pager(i) {
    const m = matrices[i], s = sections[i];
    const div = element("div", {class: "pager"});
    const rows = element("span"), cols = element("span");
    const step = (dr, dc) => () => {
      s.row = Math.min(Math.max(0, s.row + dr * PAGE), Math.floor((m.shape[0] - 1) / PAGE) * PAGE);
      s.col = Math.min(Math.max(0, s.col + dc * PAGE), Math.floor((m.shape[1] - 1) / PAGE) * PAGE);
      drawTable(i);
    };
    const button = (text, f) => { const b = element("button", {type: "button"}, text); b.onclick = f; return b; };
    div.append(button("◂ rows", step(-1, 0)), rows, button("rows ▸", step(1, 0)),
               button("◂ columns", step(0, -1)), cols, button("columns ▸", step(0, 1)));
    s.pager = {rows, cols};
    return div;
  }

  function drawMatrix(i) {
    const m = matrices[i];
    const sec = element("section", {class: "matrix", "data-matrix": i, "data-head": m.head, "aria-labelledby": "m" + i});
    const title = [m.name + (m.head ? " · head " + m.head : ""), `${m.shape[0]}×${m.shape[1]}`, m.formula].filter(Boolean).join(" · ");
    sec.append(element("h2", {id: "m" + i}, title));
    sec.append(element("p", {}, m.applied ? m.title : "skipped: " + m.reason));
    sec.append(legend(m));
    const s = {row: 0, col: 0, holder: element("div", {class: "scroll"}), pager: null};
    sections[i] = s;
    if (m.shape[0] > PAGE || m.shape[1] > PAGE) sec.append(pager(i));
    sec.append(s.holder);
    main.append(sec);
    drawTable(i);
  }

  // The cell pane and the marks of the cells a cell came from.
  let marked = [];
  function show(td) {
    const table = td.closest("table.heat");
    const i = Number(table.dataset.matrix), r = Number(td.dataset.r), c = Number(td.dataset.c);
    const m = matrices[i], k = r * m.shape[1] + c;
    for (const e of marked) e.classList.remove("from", "current");
    marked = [td];
    td.classList.add("current");
    const pane = [element("p", {class: "cell-value"}, `${label(m, r, c)} = ${m.values[k]}`)];
    if (m.formula) pane.push(element("p", {class: "muted"}, m.formula));
    if (m.work && m.work.length && m.work[k].length) pane.push(element("pre", {class: "work"}, m.work[k].map(l => data.lines[l]).join("\n")));
    else if (m.note) pane.push(element("p", {class: "note"}, m.note));
    else if (m.kind === "stage" && m.shape[0] > data.worked_rows) pane.push(element("p", {class: "note"}, `This table has more than ${data.worked_rows} rows, so its cells carry no arithmetic and no outlines here; attntrace INPUT -q TOKEN works through one row.`));
    const from = m.from && m.from.length ? m.from[k] : [];
    const names = [];
    for (let j = 0; j < from.length; j += 3) {
      const [at, fr, fc] = from.slice(j, j + 3);
      const other = matrices[at];
      names.push(other.name + (other.head ? " · head " + other.head : ""));
      for (const cell of document.querySelectorAll(`table.heat[data-matrix="${at}"] td`)) {
        if ((fr < 0 || Number(cell.dataset.r) === fr) && (fc < 0 || Number(cell.dataset.c) === fc)) {
          cell.classList.add("from");
          marked.push(cell);
        }
      }
    }
    if (names.length) pane.push(element("p", {class: "sources"}, "computed from " + [...new Set(names)].join(" and ") + " (outlined)"));
    aside.replaceChildren(...pane);
  }
  main.addEventListener("mouseover", e => { const td = e.target.closest("table.heat td"); if (td) show(td); });
  main.addEventListener("focusin", e => { const td = e.target.closest("table.heat td"); if (td) show(td); });

  function heads(count, apply) {
    const div = element("div", {class: "controls", role: "group", "aria-label": "heads"});
    const buttons = [];
    const choose = h => { apply(h); buttons.forEach((b, j) => b.setAttribute("aria-pressed", String(j + 1 === h))); };
    for (let h = 1; h <= count; h++) {
      const b = element("button", {type: "button", "aria-pressed": String(h === 1)}, "head " + h);
      b.onclick = () => choose(h);
      buttons.push(b);
      div.append(b);
    }
    main.append(div);
    return choose;
  }

  function drawSummary() {
    const groups = data.summary.heads;
    const holder = element("div");
    let group = 0, start = 0;
    const ROWS = 50;
    const draw = () => {
      const queries = groups[group].queries;
      const table = element("table", {class: "summary"});
      table.append(element("caption", {class: "visually-hidden"}, `the strongest ${data.summary.top} keys of queries ${start + 1} to ${Math.min(queries.length, start + ROWS)}`));
      const h = element("tr");
      for (const t of ["query", `its ${data.summary.top} strongest keys (position: weight)`, "largest weight", "entropy (nats)"]) h.append(element("th", {scope: "col"}, t));
      table.append(element("thead"));
      table.tHead.append(h);
      const body = table.appendChild(element("tbody"));
      for (let q = start; q < Math.min(queries.length, start + ROWS); q++) {
        const query = queries[q], tr = body.appendChild(element("tr"));
        tr.append(element("th", {scope: "row"}, `${q + 1} ${query.token}`));
        tr.append(element("td", {}, query.top.map(([token, at, w]) => `${token} (${at}): ${w}`).join(", ")));
        tr.append(element("td", {}, query.max), element("td", {}, query.entropy));
      }
      where.textContent = `queries ${start + 1}–${Math.min(queries.length, start + ROWS)} of ${queries.length}`;
      holder.replaceChildren(table);
    };
    if (groups.length > 1) heads(groups.length, h => { group = h - 1; draw(); });
    const nav = element("div", {class: "pager"}), where = element("span");
    const move = d => () => { start = Math.min(Math.max(0, start + d * ROWS), Math.floor((groups[group].queries.length - 1) / ROWS) * ROWS); draw(); };
    const back = element("button", {type: "button"}, "◂ queries"), on = element("button", {type: "button"}, "queries ▸");
    back.onclick = move(-1), on.onclick = move(1);
    nav.append(back, where, on);
    main.append(nav, holder);
    draw();
  }

  main.append(element("h1", {}, data.title));
  if (data.description) main.append(element("p", {}, data.description));
  for (const note of data.notes || []) main.append(element("p", {class: "muted"}, "note: " + note));
  if (data.loss) main.append(element("p", {class: "loss"}, data.loss));
  if (data.kind === "summary") {
    drawSummary();
  } else {
    if (data.heads > 1 && matrices.some(m => m.head > 0)) {
      heads(data.heads, h => {
        for (const sec of main.querySelectorAll("section.matrix")) sec.hidden = sec.dataset.head !== "0" && sec.dataset.head !== String(h);
      })(1);
    }
    matrices.forEach((m, i) => drawMatrix(i));
    if (data.heads > 1) for (const sec of main.querySelectorAll("section.matrix")) sec.hidden = sec.dataset.head !== "0" && sec.dataset.head !== "1";
  }

  // #cell=M,R,C: that cell's page, shown and focused.
  const wanted = /^#cell=(\d+),(\d+),(\d+)$/.exec(location.hash);
  if (wanted && matrices[wanted[1]]) {
    const [i, r, c] = wanted.slice(1).map(Number), s = sections[i];
    s.row = Math.floor(r / PAGE) * PAGE, s.col = Math.floor(c / PAGE) * PAGE;
    drawTable(i);
    const sec = main.querySelector(`section.matrix[data-matrix="${i}"]`);
    if (sec.hidden) for (const b of main.querySelectorAll(".controls button")) if (b.textContent === "head " + matrices[i].head) b.click();
    const td = main.querySelector(`table.heat[data-matrix="${i}"] td[data-r="${r}"][data-c="${c}"]`);
    if (td) {
      td.focus({preventScroll: true});
      td.scrollIntoView({block: "center", inline: "center"});  // as a link to an anchor would
      show(td);
      // Where the cell ended up in the window, in pixels (for the tests).
      const box = td.getBoundingClientRect();
      Object.assign(document.body.dataset, {cellTop: box.top.toFixed(0), cellBottom: box.bottom.toFixed(0),
                                            viewHeight: String(innerHeight), scrolled: scrollY.toFixed(0)});
    }
  }
  // When the page was drawn, in milliseconds from the start of its loading (for the benchmark).
  document.body.dataset.drawnMs = performance.now().toFixed(0);
})();
