/* fastdiff's HTML report: the timeline heatmap (only the rows in view are
   drawn, runs of equal steps folded), groups that open into their buffers,
   what a cell holds, an overview of every step, and printing. Vanilla
   script written for fastdiff, no library. It sets text only (textContent),
   never markup: the names it shows cannot add any. */
(function () {
  "use strict";
  var src = document.getElementById("fd-data");
  var D = src ? JSON.parse(src.textContent) : {};
  var views = D.views || [];
  var box = document.getElementById("hm");

  function mk(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  /* --- cards: links open them; printing opens every one ------------------ */
  function openTarget(id) {
    var t = id && document.getElementById(id);
    if (t && t.tagName === "DETAILS") t.open = true;
    return t;
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a[href^='#']") : null;
    if (a) openTarget(a.getAttribute("href").slice(1));
  });
  if (location.hash) openTarget(location.hash.slice(1));
  var closed = [];
  window.addEventListener("beforeprint", function () {
    closed = [];
    document.querySelectorAll("details:not([open])").forEach(function (d) {
      closed.push(d);
      d.open = true;
    });
    if (hm) hm.print(true);
  });
  window.addEventListener("afterprint", function () {
    closed.forEach(function (d) { d.open = false; });
    closed = [];
    if (hm) hm.print(false);
  });

  if (!box || !views.length) return;

  /* --- the heatmap ------------------------------------------------------- */
  var ROWH = 18, OVER = 12, PRINT_ROWS = 160;
  var CLS = D.classes, W = D.words, SEV = {};
  for (var s = 0; s < D.severity.length; s++) SEV[D.severity.charAt(s)] = s;
  var detail = document.getElementById("hm-detail");
  var note = document.getElementById("hm-print");
  var canvas = document.getElementById("hm-overview");
  var st = { v: 0, open: Object.create(null), rows: [], rowOf: null, cols: [], a: -1, b: -1, printing: false };
  var head, space, body, selected = null, colours = {};

  function quiet(ch) { return ch === "." || ch === " "; }

  function textsOf(col) { /* step index -> the text of each cell neither equal nor absent */
    if (!col._t) {
      var m = {}, k = 0, c = col.cells;
      for (var i = 0; i < c.length; i++) if (!quiet(c.charAt(i))) m[i] = col.texts[k++];
      col._t = m;
    }
    return col._t;
  }
  function textOf(col, i) {
    var ch = col.cells.charAt(i);
    return quiet(ch) ? W[ch] : textsOf(col)[i];
  }
  function isOrigin(col, i) {
    if (!col.o) return false;
    if (!col._o) { col._o = {}; col.o.forEach(function (j) { col._o[j] = 1; }); }
    return col._o[i] === 1;
  }

  function fold(view) { /* rows: [first, last] step indices; runs of equal steps fold */
    var n = view.steps.length, g = view.groups, rows = [], rowOf = new Int32Array(n);
    function still(i) {
      for (var j = 0; j < g.length; j++) if (!quiet(g[j].cells.charAt(i))) return false;
      return true;
    }
    for (var i = 0; i < n;) {
      var j = i;
      if (still(i)) while (j + 1 < n && still(j + 1)) j++;
      for (var k = i; k <= j; k++) rowOf[k] = rows.length;
      rows.push([i, j, still(i)]);
      i = j + 1;
    }
    st.rows = rows;
    st.rowOf = rowOf;
  }

  function columns(view) {
    var cols = [];
    view.groups.forEach(function (g) {
      cols.push({ c: g, g: g, b: false });
      if (st.open[g.key]) g.buffers.forEach(function (b) { cols.push({ c: b, g: g, b: true }); });
    });
    st.cols = cols;
  }

  function header() {
    var h = mk("div", "hm-head"), longest = 1;
    st.cols.forEach(function (col) { longest = Math.max(longest, (col.b ? col.c.name : col.g.key).length); });
    h.style.setProperty("--headh", Math.min(150, 26 + 7 * longest) + "px");
    h.appendChild(mk("div", "hm-step", W.step));
    st.cols.forEach(function (col) {
      var key = col.g.key;
      if (!col.b) {
        var open = !!st.open[key], btn = mk("button", "hm-g");
        btn.type = "button";
        btn.dataset.group = key;
        btn.setAttribute("aria-expanded", open ? "true" : "false");
        btn.title = key + (col.g.title ? ": " + col.g.title : "") + " (" +
          col.g.buffers.length + " buffers: " + (open ? "close" : "open") + ")";
        btn.appendChild(mk("span", null, key));
        btn.appendChild(mk("i", null, open ? "\u25be" : "\u25b8"));
        h.appendChild(btn);
      } else {
        var d = mk("div", "hm-b");
        d.title = key + " " + col.c.name;
        d.dataset.buffer = col.c.name;
        d.appendChild(mk("span", null, col.c.name));
        h.appendChild(d);
      }
    });
    return h;
  }

  function label(view, span) {
    var steps = view.steps;
    return span[1] > span[0] ? steps[span[0]] + "\u2013" + steps[span[1]] : String(steps[span[0]]);
  }

  function rowEl(view, r) {
    var span = st.rows[r], i = span[0], e = mk("div", "hm-row");
    if (span[1] > i) e.className += " fold";
    else if (!span[2]) e.className += " div";
    e.dataset.step = view.steps[i];
    var lab = mk("div", "hm-step", label(view, span));
    lab.title = "step " + label(view, span) + (span[2] ? ": " + W["."] : "");
    e.appendChild(lab);
    for (var k = 0; k < st.cols.length; k++) {
      var col = st.cols[k], c = col.c, ch = c.cells.charAt(i);
      var cell = mk("span", "c " + CLS[ch] + (col.b ? " bc" : ""));
      cell.dataset.r = r;
      cell.dataset.k = k;
      cell.dataset.group = col.g.key;
      if (col.b) cell.dataset.buffer = c.name;
      if (isOrigin(c, i)) cell.className += " o";
      if (!col.b && i === view.first && view.firstGroups.indexOf(c.key) >= 0) cell.className += " first";
      cell.title = (col.b ? col.g.key + " " + c.name : c.key) + ", step " + label(view, span) +
        ": " + textOf(c, i) + (isOrigin(c, i) ? " (" + W.origin + ")" : "");
      e.appendChild(cell);
    }
    return e;
  }

  function draw(a, b) {
    var view = views[st.v], frag = document.createDocumentFragment();
    st.a = a;
    st.b = b;
    for (var r = a; r < b; r++) frag.appendChild(rowEl(view, r));
    body.replaceChildren(frag);
    body.style.transform = "translateY(" + a * ROWH + "px)";
    selected = null;
  }

  function paint(force) {
    if (st.printing) return;
    var top = Math.max(0, box.scrollTop - space.offsetTop), h = box.clientHeight || 400;
    var a = Math.max(0, Math.floor(top / ROWH) - OVER);
    var b = Math.min(st.rows.length, Math.ceil((top + h) / ROWH) + OVER);
    if (force || a !== st.a || b !== st.b) draw(a, b);
  }

  function layout(keepScroll) {
    var view = views[st.v], top = box.scrollTop, left = box.scrollLeft;
    columns(view);
    /* cells as wide as the box allows, between 12 and 36 pixels */
    var avail = (box.parentNode.clientWidth || 900) - 96, n = Math.max(1, st.cols.length);
    box.style.setProperty("--cellw", Math.max(12, Math.min(36, Math.floor(avail / n) - 2)) + "px");
    box.replaceChildren();
    head = header();
    space = mk("div", "hm-space");
    space.style.height = st.rows.length * ROWH + "px";
    body = mk("div", "hm-rows");
    space.appendChild(body);
    box.appendChild(head);
    box.appendChild(space);
    if (keepScroll) {
      box.scrollTop = top;
      box.scrollLeft = left;
    }
    paint(true);
  }

  function build() {
    fold(views[st.v]);
    layout(false);
    overview();
    var first = views[st.v].first;
    if (first !== null && first !== undefined) scrollToStep(first, false);
  }

  function scrollToStep(i, always) {
    var y = st.rowOf[i] * ROWH, h = box.clientHeight || 400;
    if (always || y > box.scrollTop + h - 3 * ROWH) box.scrollTop = Math.max(0, y - 2 * ROWH);
    paint(false);
  }

  function colour(ch) {
    if (!(ch in colours)) {
      var probe = mk("span", "c " + CLS[ch]);
      probe.style.position = "absolute";
      probe.style.visibility = "hidden";
      document.body.appendChild(probe);
      colours[ch] = getComputedStyle(probe).backgroundColor;
      probe.remove();
    }
    return colours[ch];
  }

  function overview() { /* every step at a glance: a bin of steps shows its worst cell */
    if (!canvas || !canvas.getContext) return;
    var view = views[st.v], n = view.steps.length, gs = view.groups;
    canvas.hidden = st.rows.length * ROWH < (box.clientHeight || 400); /* all in view already */
    if (canvas.hidden) return;
    var w = Math.max(100, canvas.clientWidth || 800), h = 48;
    canvas.width = w;
    canvas.height = h;
    var ctx = canvas.getContext("2d");
    ctx.fillStyle = colour(".");
    ctx.fillRect(0, 0, w, h);
    if (!n || !gs.length) return;
    var bins = Math.min(n, w), bw = w / bins, gh = h / gs.length;
    for (var g = 0; g < gs.length; g++) {
      var cells = gs[g].cells;
      for (var x = 0; x < bins; x++) {
        var lo = Math.floor(x * n / bins), hi = Math.max(lo + 1, Math.floor((x + 1) * n / bins));
        var worst = 1, ch = ".";
        for (var i = lo; i < hi; i++) {
          var c = cells.charAt(i), sv = SEV[c];
          if (sv > worst) { worst = sv; ch = c; }
        }
        if (worst > 1) {
          ctx.fillStyle = colour(ch);
          ctx.fillRect(Math.floor(x * bw), Math.floor(g * gh), Math.ceil(bw), Math.ceil(gh));
        }
      }
    }
    if (view.first !== null && view.first !== undefined) { /* a tick at the first divergent step */
      var fx = Math.floor(Math.floor(view.first * bins / n) * bw);
      ctx.fillStyle = "#000";
      ctx.fillRect(fx, 0, 2, h);
      ctx.beginPath();
      ctx.moveTo(fx - 4, 0);
      ctx.lineTo(fx + 6, 0);
      ctx.lineTo(fx + 1, 7);
      ctx.fill();
    }
  }

  function cardLink(parent, col, i) {
    var id = col.k && col.k[String(i)];
    if (!id) return;
    var a = mk("a", null, "the buffer below");
    a.href = "#" + id;
    parent.appendChild(document.createTextNode(" ("));
    parent.appendChild(a);
    parent.appendChild(document.createTextNode(")"));
  }

  function show(cell) {
    var view = views[st.v], r = +cell.dataset.r, col = st.cols[+cell.dataset.k];
    var span = st.rows[r], i = span[0], c = col.c;
    if (selected) selected.classList.remove("sel");
    selected = cell;
    cell.classList.add("sel");
    detail.replaceChildren();
    var what = col.b ? col.g.key + " " + c.name : col.g.key + (col.g.title ? " (" + col.g.title + ")" : "");
    detail.appendChild(mk("h3", null, what + ", step " + label(view, span)));
    var p = mk("p", null, textOf(c, i) + (isOrigin(c, i) ? " (" + W.origin + ")" : ""));
    if (col.b) cardLink(p, c, i);
    detail.appendChild(p);
    if (col.b) return;
    var ul = mk("ul"), equal = 0;
    c.buffers.forEach(function (b) {
      var ch = b.cells.charAt(i);
      if (ch === ".") equal++;
      if (quiet(ch)) return;
      var li = mk("li");
      li.appendChild(mk("code", null, b.name));
      li.appendChild(document.createTextNode(": " + textOf(b, i) + (isOrigin(b, i) ? " (" + W.origin + ")" : "")));
      cardLink(li, b, i);
      ul.appendChild(li);
    });
    if (equal) ul.appendChild(mk("li", "eq", equal + " " + W["."]));
    detail.appendChild(ul);
    var btn = mk("button", null, (st.open[c.key] ? "close " : "open ") + c.key);
    btn.type = "button";
    btn.addEventListener("click", function () { toggle(c.key); });
    detail.appendChild(btn);
  }

  function toggle(key) {
    st.open[key] = !st.open[key];
    layout(true);
  }

  box.addEventListener("click", function (ev) {
    var t = ev.target, g = t.closest(".hm-g");
    if (g) toggle(g.dataset.group);
    else if (t.classList.contains("c")) show(t);
  });
  var pending = false;
  box.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; paint(false); });
  }, { passive: true });
  window.addEventListener("resize", function () { paint(true); overview(); });
  if (canvas) canvas.addEventListener("click", function (ev) {
    var rect = canvas.getBoundingClientRect(), n = views[st.v].steps.length;
    var i = Math.min(n - 1, Math.max(0, Math.floor((ev.clientX - rect.left) / rect.width * n)));
    scrollToStep(i, true);
  });
  document.querySelectorAll(".controls [data-act]").forEach(function (b) {
    b.addEventListener("click", function () {
      var act = b.dataset.act, view = views[st.v];
      if (act === "first" && view.first !== null) { scrollToStep(view.first, true); return; }
      view.groups.forEach(function (g) { st.open[g.key] = act === "open"; });
      layout(true);
    });
  });
  var pick = document.getElementById("hm-view");
  if (pick) pick.addEventListener("change", function () {
    st.v = +pick.value;
    st.open = Object.create(null);
    detail.replaceChildren();
    build();
  });

  var hm = {
    print: function (on) { /* a print shows the rows from the first divergent step on */
      st.printing = false;
      if (!on) { note.textContent = ""; paint(true); return; }
      var view = views[st.v], first = view.first === null ? 0 : st.rowOf[view.first];
      var a = Math.max(0, first - 2), b = Math.min(st.rows.length, a + PRINT_ROWS);
      draw(a, b);
      st.printing = true;
      note.textContent = st.rows.length > b - a ? "printed: rows " + (a + 1) + " to " + b +
        " of " + st.rows.length + " (steps " + view.steps[st.rows[a][0]] + " to " +
        view.steps[st.rows[b - 1][1]] + "); the page on screen holds every step" : "";
    }
  };
  build();
})();
