// polygraphy's HTML report: builds the page from the JSON in #report-data (embedded into each report).
// Written for this project, no libraries, no network. Every name from the model or the command line
// goes into the page as text (textContent, canvas text), never as markup.
'use strict';
(function () {
  const body = document.body;
  const errors = [];
  window.addEventListener('error', (event) => {
    errors.push(String(event.message || event.type));
    body.dataset.errors = errors.join('\n');
  });

  const data = JSON.parse(document.getElementById('report-data').textContent);
  const app = document.getElementById('app');
  // The report leaves out what the page can fill in (polygraphy/comparator/html_report.cpp, write_entry).
  for (const comparison of data.comparisons || []) {
    for (const o of comparison.outputs) {
      if (o.o === undefined) o.o = o.t;
      if (data.graph && o.n >= 0) { o.op = data.graph.op[o.n]; o.nn = data.graph.name[o.n]; }
      if (o.op === undefined) { o.op = ''; o.nn = ''; }
      if (o.vb) { o.vb.log = o.va.log; o.vb.lo = o.va.lo; o.vb.hi = o.va.hi; }
    }
  }

  // ---- helpers -----------------------------------------------------------------------------------
  // JSON has no NaN or Infinity: the report writes them as strings.
  const num = (value) => (typeof value === 'string' ? Number(value) : value);

  function el(tag, props, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === 'text') node.textContent = value;
      else if (key === 'class') node.className = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children || []) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svgEl(tag, attrs, text) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fmt(value) {
    value = num(value);
    if (value === null || value === undefined || value === '') return '';
    if (Number.isNaN(value)) return 'NaN';
    if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
    if (value === 0) return '0';
    const magnitude = Math.abs(value);
    if (magnitude >= 1e-3 && magnitude < 1e5) return String(Number(value.toPrecision(4)));
    return value.toExponential(2);
  }

  // Growth is kept in decades; people read it as a factor.
  function fmtGrowth(decades) {
    decades = num(decades);
    if (!Number.isFinite(decades)) return decades > 0 ? '\u00d7inf' : '';
    if (Math.abs(decades) < 0.005) return '\u00d71';
    return '\u00d7' + fmt(Math.pow(10, decades));
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  // The colour scale of the graph, shared with Model Explorer node data: the ratio of the maximum
  // absolute difference to the absolute tolerance (see polygraphy/comparator/model_explorer.h).
  const SCALE = [
    {colour: '#1a9850', label: 'passed, \u2264 1% of tol'},
    {colour: '#91cf60', label: 'passed'},
    {colour: '#fee08b', label: 'failed, \u2264 10\u00d7 tol'},
    {colour: '#fdae61', label: '\u2264 100\u00d7'},
    {colour: '#f46d43', label: '\u2264 1000\u00d7'},
    {colour: '#a50026', label: 'worse / NaN'},
  ];
  const NOT_COMPARED = '#e6e8eb';
  function errorLevel(output) {
    if (output.e) return 5;
    const error = num(output.ma), atol = num(output.at);
    const ratio = atol > 0 ? error / atol : (error > 0 ? Infinity : 0);
    if (output.p) return ratio <= 0.01 ? 0 : 1;
    if (!(ratio <= 1000)) return 5;
    return ratio <= 10 ? 2 : ratio <= 100 ? 3 : 4;
  }
  // Growth colours: white (no growth) to dark orange (three decades or more).
  function growthColour(decades) {
    const t = Math.max(0, Math.min(1, (Number.isFinite(decades) ? decades : 3) / 3));
    const mix = (a, b) => Math.round(a + (b - a) * t);
    return `rgb(${mix(255, 166)},${mix(247, 54)},${mix(236, 3)})`;
  }

  function setupCanvas(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const context = canvas.getContext('2d');
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    return {context, width, height};
  }

  // ---- histograms (SVG) ------------------------------------------------------------------------------
  // Draws one or two histograms on the same bins. `series`: [{hist, colour, label}].
  function histogramSvg(title, series, logScale) {
    const width = 320, height = 112, left = 8, right = 8, top = 16, bottom = 30;
    const svg = svgEl('svg', {class: 'hist', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img'});
    svg.append(svgEl('text', {x: left, y: 11}, title));
    const first = series[0].hist;
    const bins = first.c.length;
    if (bins === 0) {
      svg.append(svgEl('text', {x: left, y: top + 30}, 'no positive values'));
    } else {
      let most = 1;
      for (const s of series) for (const count of s.hist.c) most = Math.max(most, count);
      const plotWidth = width - left - right, plotHeight = height - top - bottom;
      const barWidth = plotWidth / bins;
      series.forEach((s, index) => {
        let path = `M${left},${top + plotHeight}`;
        s.hist.c.forEach((count, bin) => {
          const y = top + plotHeight - (count > 0 ? Math.max(1, (count / most) * plotHeight) : 0);
          path += `L${left + bin * barWidth},${y}L${left + (bin + 1) * barWidth},${y}`;
        });
        path += `L${left + plotWidth},${top + plotHeight}Z`;
        svg.append(svgEl('path', {
          d: path,
          fill: index === 0 ? s.colour : 'none',
          'fill-opacity': index === 0 ? 0.35 : 0,
          stroke: s.colour,
          'stroke-width': 1.2,
        }));
      });
      svg.append(svgEl('line', {x1: left, x2: left + plotWidth, y1: top + plotHeight, y2: top + plotHeight, stroke: '#8c959f'}));
      const lo = num(first.lo), hi = num(first.hi);
      svg.append(svgEl('text', {x: left, y: top + plotHeight + 11}, fmt(lo)));
      svg.append(svgEl('text', {x: left + plotWidth, y: top + plotHeight + 11, 'text-anchor': 'end'}, fmt(hi)));
      if (logScale) svg.append(svgEl('text', {x: left + plotWidth / 2, y: top + plotHeight + 11, 'text-anchor': 'middle'}, 'log scale'));
    }
    const notes = [];
    for (const s of series) {
      const parts = [];
      if (logScale && s.hist.z) parts.push(`${s.hist.z} exact (0)`);
      if (s.hist.n) parts.push(`${s.hist.n} NaN`);
      if (s.hist.i) parts.push(`${s.hist.i} inf`);
      if (series.length > 1 || parts.length) notes.push((series.length > 1 ? s.label + ': ' : '') + (parts.join(', ') || 'all finite'));
    }
    if (notes.length) svg.append(svgEl('text', {x: left, y: height - 4}, notes.join(' \u2022 ')));
    return svg;
  }

  // ---- header ------------------------------------------------------------------------------------------
  function buildHeader() {
    const isComparison = data.kind === 'comparison';
    const passed = isComparison ? data.passed : !data.error;
    const h1 = el('h1', {}, [data.title]);
    if (isComparison) h1.append(el('span', {class: 'verdict ' + (passed ? 'pass' : 'fail'), id: 'verdict', text: passed ? 'PASSED' : 'FAILED'}));
    const meta = el('dl', {class: 'meta'});
    const add = (term, value, attrs) => meta.append(el('dt', {text: term}), el('dd', attrs || {}, [value]));
    if (data.command) add('Command', el('code', {text: data.command}));
    if (isComparison) {
      add('Runners', data.runners.length ? data.runners.join(' \u2192 ') : 'none');
      if (data.divergence) {
        const d = data.divergence;
        add('First divergence', `node ${d.node} (${d.op}), output ${d.tensor} | ${d.first} vs. ${d.second}, iteration ${d.iteration}`,
          {id: 'summary-divergence', 'data-node': d.node, 'data-tensor': d.tensor});
      } else {
        add('First divergence', 'none', {id: 'summary-divergence'});
      }
    } else {
      add('Contents', `${data.runs.length} runner iteration(s)`);
    }
    const header = el('header', {}, [h1, meta]);
    if (data.error) header.append(el('div', {class: 'error-box', id: 'report-error', text: data.error}));
    if (isComparison && !data.error && data.comparisons.every((c) => c.outputs.length === 0))
      header.append(el('div', {class: 'error-box', id: 'report-error', text: 'Nothing was compared: the results have no common outputs.'}));
    return header;
  }

  // ---- the samples of each runner pair, per output (polygraphy/comparator/dataset_summary.h) --------
  function datasetSection() {
      const pairs = data.dataset || [];
      if (pairs.length === 0) return null;
      const section = el('section', {id: 'dataset', class: 'dataset'}, [el('h2', {text: 'Dataset summary'})]);
      for (const pair of pairs) {
          section.append(el('h3', {text: `${pair.first} vs. ${pair.second} \u2022 ${pair.samples} samples`}));
          const headers = [
              'Output', 'Passed', 'Failed', 'max |a\u2212b| per sample: min / median / p90 / max', 'Worst sample',
              'Samples passing vs. absolute tolerance'
          ];
          const table = el('table', {class: 'dataset-table'}, [el('tr', {}, headers.map((h) => el('th', {text: h})))]);
          for (const o of pair.outputs) {
              table.append(el('tr', {'data-dataset-output': o.t, class: o.fs > 0 ? 'failed' : 'passed'}, [
                  el('td', {text: o.t}), el('td', {text: o.ps}), el('td', {text: o.fs}),
                  el('td', {text: o.q.map(fmt).join(' / ')}), el('td', {text: o.w}), el('td', {}, [passRateCurve(o.ma)])
              ]));
          }
          section.append(table);
      }
      return section;
  }

  // The fraction of samples whose largest absolute difference is within the tolerance, as the tolerance
  // grows: a step curve on a log axis from the smallest difference to the largest.
  function passRateCurve(values) {
      const width = 180, height = 44;
      const svg = svgEl('svg', {width, height, class: 'pass-rate', role: 'img'});
      const all = values.map(num);
      const positive = all.filter((v) => Number.isFinite(v) && v > 0).sort((a, b) => a - b);
      const exact = all.filter((v) => v === 0).length;
      if (positive.length === 0) {
          svg.append(svgEl('text', {x: 4, y: 26}, exact === all.length ? 'every sample exact' : 'not comparable'));
          return svg;
      }
      const lo = Math.log10(positive[0]) - 0.3, hi = Math.log10(positive[positive.length - 1]) + 0.3;
      const x = (v) => (4 + ((Math.log10(v) - lo) / (hi - lo)) * (width - 8)).toFixed(1);
      const y = (passing) => (height - 12 - (passing / all.length) * (height - 16)).toFixed(1);
      let passing = exact;
      let path = `M4 ${y(passing)}`;
      for (const v of positive) {
          passing += 1;
          path += ` H${x(v)} V${y(passing)}`;
      }
      path += ` H${width - 4}`;
      svg.append(svgEl('path', {d: path, fill: 'none', stroke: '#0969da', 'stroke-width': 1.5}));
      svg.append(svgEl('text', {x: 4, y: height - 1, class: 'axis'}, fmt(positive[0])));
      svg.append(svgEl(
          'text', {x: width - 4, y: height - 1, class: 'axis', 'text-anchor': 'end'},
          fmt(positive[positive.length - 1])));
      svg.append(svgEl(
          'title', {},
          `Samples passing as the absolute tolerance grows from ${fmt(positive[0])} to ` +
              `${fmt(positive[positive.length - 1])} (${passing} of ${all.length} at the largest)`));
      return svg;
  }

  // ---- comparison report --------------------------------------------------------------------------
  function comparisonPage() {
    const graph = data.graph || null;
    const state = {comparison: 0, selected: -1};
    const comparisons = data.comparisons;
    const current = () => comparisons[state.comparison] || {outputs: [], first: '', second: '', iteration: 0};

    const main = el('main');
    app.append(buildHeader(), main);
    if (comparisons.length === 0) {
      main.append(el('p', {class: 'empty', text: 'No comparison to show.'}));
      return;
    }

    const picker = el('select', {id: 'comparison-select', 'aria-label': 'Comparison'});
    comparisons.forEach((c, index) => picker.append(el('option', {value: index, text: `${c.first} vs. ${c.second} \u2022 iteration ${c.iteration}`})));
    if (comparisons.length > 1) main.append(el('div', {class: 'toolbar'}, [el('label', {}, ['Comparison ', picker])]));
    const dataset = datasetSection();
    if (dataset) main.append(dataset);

    // Profile
    // The relative L1 error is the measure of error growth (polygraphy/comparator/error_profile.h); the
    // element-wise relative errors are off at first: near-zero values make them spike by many decades.
    const seriesDefs = [
      {key: 'ma', label: 'max |a\u2212b|', colour: '#0969da', dash: [], on: true, tolerance: 'at'},
      {key: 'ea', label: 'mean |a\u2212b|', colour: '#0969da', dash: [5, 3], on: true, tolerance: 'at'},
      {key: 'lv', label: 'mean |a\u2212b| / mean |b|', colour: '#1a7f37', dash: [], on: true},
      {key: 'mr', label: 'max relative', colour: '#bf3989', dash: [], on: false, tolerance: 'rt'},
      {key: 'er', label: 'mean relative', colour: '#bf3989', dash: [5, 3], on: false, tolerance: 'rt'},
    ];
    const profileCanvas = el('canvas', {id: 'profile-canvas'});
    const profileTip = el('div', {class: 'tooltip'});
    const profileKeys = el('div', {class: 'toolbar'});
    for (const s of seriesDefs) {
      const box = el('input', {type: 'checkbox'});
      box.checked = s.on;
      box.addEventListener('change', () => { s.on = box.checked; drawProfile(); });
      profileKeys.append(el('label', {}, [box, el('span', {class: 'swatch', style: `background:${s.colour}`}), s.label]));
    }
    profileKeys.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: 'background:#fff;border:1px dotted #0969da'}), 'tolerance (abs / rel)']));
    profileKeys.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: 'background:#cf222e'}), 'first divergence']));
    profileKeys.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: 'background:#bc4c00'}), 'fastest error growth']));
    main.append(el('section', {id: 'profile'}, [
      el('h2', {}, ['Per-layer error profile', el('span', {class: 'hint', text: 'compared outputs in topological order, log scale; click to select'})]),
      profileKeys,
      el('div', {class: 'panel'}, [profileCanvas, profileTip]),
    ]));

    // Graph and details
    const graphCanvas = el('canvas', {id: 'graph-canvas'});
    const details = el('div', {class: 'panel', id: 'details'});
    const graphSection = el('section', {id: 'graph'});
    const search = el('input', {type: 'search', placeholder: 'Find a node (name, op or tensor); Enter for next'});
    const colourMode = el('select', {'aria-label': 'Colour nodes by'}, [
      el('option', {value: 'error', text: 'error vs. tolerance'}),
      el('option', {value: 'growth', text: 'error growth'}),
    ]);
    const legend = el('div', {class: 'toolbar', id: 'graph-legend'});
    if (graph) {
      const fitButton = el('button', {text: 'Fit', onclick: () => { view.fit(); view.draw(); }});
      const divergeButton = el('button', {text: 'First divergence', onclick: () => {
        const index = current().outputs.findIndex((o) => o.fd);
        if (index >= 0) select(index, true);
      }});
      graphSection.append(
        el('h2', {}, ['Graph', el('span', {class: 'hint', text: `${graph.name.length} nodes; drag to pan, wheel to zoom, click a node`})]),
        el('div', {class: 'toolbar'}, [search, el('label', {}, ['Colour by ', colourMode]), fitButton, divergeButton]),
        el('div', {class: 'split'}, [el('div', {class: 'panel'}, [graphCanvas]), details]),
        legend);
    } else {
      graphSection.append(el('h2', {}, ['Details', el('span', {class: 'hint', text: 'no model given: no graph to draw'})]), details);
    }
    main.append(graphSection);

    // Table
    const filter = el('input', {type: 'search', placeholder: 'Filter by name or op type', id: 'table-filter'});
    const failingOnly = el('input', {type: 'checkbox'});
    const count = el('span', {class: 'count'});
    const table = el('table', {class: 'outputs', id: 'outputs-table'});
    main.append(el('section', {id: 'table'}, [
      el('h2', {}, ['Compared outputs', el('span', {class: 'hint', text: 'click a column to sort'})]),
      el('div', {class: 'toolbar'}, [filter, el('label', {}, [failingOnly, 'failing only']), count]),
      el('div', {class: 'table-wrap'}, [table]),
    ]));

    // ---- per-node index of the current comparison's outputs
    let nodeOutputs = new Map(), tensorOutputs = new Map();
    function indexOutputs() {
      nodeOutputs = new Map();
      tensorOutputs = new Map();
      current().outputs.forEach((o, index) => {
        tensorOutputs.set(o.t, o);
        if (o.n < 0) return;
        if (!nodeOutputs.has(o.n)) nodeOutputs.set(o.n, []);
        nodeOutputs.get(o.n).push(index);
      });
    }

    // ---- profile drawing
    const profileGeometry = {left: 62, right: 14, top: 24, bottom: 30};
    function drawProfile() {
      const {context: g, width, height} = setupCanvas(profileCanvas);
      const outputs = current().outputs;
      const n = outputs.length;
      g.clearRect(0, 0, width, height);
      const {left, right, top, bottom} = profileGeometry;
      const plotWidth = width - left - right, plotHeight = height - top - bottom;
      if (n === 0) {
        g.fillStyle = '#59636e';
        g.font = '13px system-ui, sans-serif';
        g.fillText('No outputs were compared.', left, top + 30);
        return;
      }
      const enabled = seriesDefs.filter((s) => s.on);
      let low = Infinity, high = -Infinity;
      const consider = (value) => { value = num(value); if (value > 0 && Number.isFinite(value)) { low = Math.min(low, value); high = Math.max(high, value); } };
      const tolerances = [...new Set(enabled.map((s) => s.tolerance).filter(Boolean))];
      for (const o of outputs) {
        for (const s of enabled) consider(o[s.key]);
        for (const key of tolerances) consider(o[key]);
      }
      if (!Number.isFinite(low)) { low = 1e-8; high = 1; }
      let lowDecade = Math.floor(Math.log10(low)), highDecade = Math.ceil(Math.log10(high));
      if (highDecade - lowDecade < 2) { lowDecade -= 1; highDecade += 1; }
      lowDecade = Math.max(lowDecade, highDecade - 24);
      const xOf = (index) => left + ((index + 0.5) * plotWidth) / n;
      const yOf = (value) => {
        value = num(value);
        if (Number.isNaN(value) || value === Infinity) return top;
        if (!(value > 0)) return top + plotHeight;
        const t = (Math.log10(value) - lowDecade) / (highDecade - lowDecade);
        return top + plotHeight * (1 - Math.max(0, Math.min(1, t)));
      };
      // failing outputs: light bands
      const band = Math.max(1, plotWidth / n);
      g.fillStyle = 'rgba(207,34,46,0.10)';
      outputs.forEach((o, index) => { if (!o.p) g.fillRect(xOf(index) - band / 2, top, band, plotHeight); });
      // decades
      g.font = '10px system-ui, sans-serif';
      g.textAlign = 'right';
      g.textBaseline = 'middle';
      const step = Math.max(1, Math.ceil((highDecade - lowDecade) / 8));
      for (let d = lowDecade; d <= highDecade; d += step) {
        const y = yOf(Math.pow(10, d));
        g.strokeStyle = '#eaeef2';
        g.beginPath(); g.moveTo(left, y); g.lineTo(left + plotWidth, y); g.stroke();
        g.fillStyle = '#59636e';
        g.fillText('1e' + d, left - 6, y);
      }
      g.strokeStyle = '#8c959f';
      g.strokeRect(left, top, plotWidth, plotHeight);
      // tolerances (per output, so a step line)
      const stepLine = (key, colour) => {
        g.strokeStyle = colour; g.setLineDash([2, 3]); g.lineWidth = 1.2;
        g.beginPath();
        outputs.forEach((o, index) => {
          const y = yOf(o[key]);
          const x0 = xOf(index) - plotWidth / n / 2, x1 = x0 + plotWidth / n;
          if (index === 0) g.moveTo(x0, y); else g.lineTo(x0, y);
          g.lineTo(x1, y);
        });
        g.stroke(); g.setLineDash([]); g.lineWidth = 1;
      };
      if (tolerances.includes('at')) stepLine('at', '#0969da');
      if (tolerances.includes('rt')) stepLine('rt', '#bf3989');
      // series
      for (const s of enabled) {
        g.strokeStyle = s.colour; g.setLineDash(s.dash); g.lineWidth = 1.4;
        g.beginPath();
        outputs.forEach((o, index) => { const x = xOf(index), y = yOf(o[s.key]); if (index === 0) g.moveTo(x, y); else g.lineTo(x, y); });
        g.stroke();
        g.setLineDash([]);
        if (n <= 400) {
          g.fillStyle = s.colour;
          outputs.forEach((o, index) => { g.beginPath(); g.arc(xOf(index), yOf(o[s.key]), 1.8, 0, 2 * Math.PI); g.fill(); });
        }
      }
      g.lineWidth = 1;
      // marks: fastest growth, first divergence, selection
      g.textAlign = 'center';
      g.textBaseline = 'bottom';
      g.font = 'bold 10px system-ui, sans-serif';
      outputs.forEach((o, index) => {
        if (!o.fg) return;
        const x = xOf(index);
        g.fillStyle = '#bc4c00';
        g.beginPath(); g.moveTo(x, top + 1); g.lineTo(x - 5, top - 8); g.lineTo(x + 5, top - 8); g.closePath(); g.fill();
        g.strokeStyle = 'rgba(188,76,0,0.5)'; g.setLineDash([3, 3]);
        g.beginPath(); g.moveTo(x, top); g.lineTo(x, top + plotHeight); g.stroke(); g.setLineDash([]);
        g.fillText(String(o.fg), x + 10, top - 8);
      });
      outputs.forEach((o, index) => {
        if (!o.fd) return;
        const x = xOf(index);
        g.strokeStyle = '#cf222e'; g.lineWidth = 2;
        g.beginPath(); g.moveTo(x, top); g.lineTo(x, top + plotHeight); g.stroke(); g.lineWidth = 1;
        g.fillStyle = '#cf222e';
        g.textAlign = x > left + plotWidth * 0.7 ? 'right' : 'left';
        g.fillText('first divergence: ' + o.t, x + (g.textAlign === 'left' ? 4 : -4), top - 10);
        g.textAlign = 'center';
      });
      if (state.selected >= 0 && state.selected < n) {
        const x = xOf(state.selected);
        g.strokeStyle = '#0969da'; g.lineWidth = 1.5;
        g.beginPath(); g.moveTo(x, top); g.lineTo(x, top + plotHeight); g.stroke(); g.lineWidth = 1;
      }
      g.fillStyle = '#59636e';
      g.textAlign = 'left'; g.textBaseline = 'alphabetic'; g.font = '10px system-ui, sans-serif';
      g.fillText(`${n} compared output(s), topological order \u2192`, left, height - 8);
    }
    function profileIndexAt(event) {
      const rect = profileCanvas.getBoundingClientRect();
      const {left, right} = profileGeometry;
      const n = current().outputs.length;
      const x = event.clientX - rect.left;
      if (n === 0 || x < left || x > rect.width - right) return -1;
      return Math.min(n - 1, Math.floor(((x - left) / (rect.width - left - right)) * n));
    }
    profileCanvas.addEventListener('mousemove', (event) => {
      const index = profileIndexAt(event);
      if (index < 0) { profileTip.style.display = 'none'; return; }
      const o = current().outputs[index];
      profileTip.textContent = `#${index} ${o.t}${o.op ? ' (' + o.op + ')' : ''}${o.p ? '' : '  FAILED'}\n` +
        `max |a\u2212b| ${fmt(o.ma)}  mean ${fmt(o.ea)}  max rel ${fmt(o.mr)}  mean rel ${fmt(o.er)}\n` +
        `mean |a\u2212b| / mean |b| ${fmt(o.lv)}  growth ${fmtGrowth(o.g)}  tolerance abs ${fmt(o.at)} rel ${fmt(o.rt)}`;
      const rect = profileCanvas.getBoundingClientRect();
      const x = event.clientX - rect.left;
      profileTip.style.display = 'block';
      profileTip.style.left = Math.min(x + 12, rect.width - profileTip.offsetWidth - 4) + 'px';
      profileTip.style.top = (event.clientY - rect.top + 14) + 'px';
    });
    profileCanvas.addEventListener('mouseleave', () => { profileTip.style.display = 'none'; });
    profileCanvas.addEventListener('click', (event) => { const index = profileIndexAt(event); if (index >= 0) select(index, true); });

    // ---- graph view: canvas, drawing only what is in view
    const view = graph ? makeGraphView() : null;
    function makeGraphView() {
      const count = graph.name.length;
      const xs = graph.x, ys = graph.y, nodeWidth = num(graph.nw), nodeHeight = num(graph.nh);
      const edges = graph.e;
      // Nodes sorted by row (y), so that the rows in view are found by binary search.
      const byY = Array.from({length: count}, (_, i) => i).sort((a, b) => ys[a] - ys[b]);
      const sortedY = byY.map((i) => ys[i]);
      const lowerBound = (value) => { let lo = 0, hi = sortedY.length; while (lo < hi) { const mid = (lo + hi) >> 1; if (sortedY[mid] < value) lo = mid + 1; else hi = mid; } return lo; };
      const self = {scale: 1, ox: 0, oy: 0, selectedNode: -1, visible: 0};

      self.fit = function () {
        const width = graphCanvas.clientWidth, height = graphCanvas.clientHeight;
        const w = Math.max(num(graph.w), 1), h = Math.max(num(graph.h), 1);
        self.scale = Math.min(width / w, height / h, 1.2);
        self.ox = w / 2 - width / 2 / self.scale;
        self.oy = h / 2 - height / 2 / self.scale;
        if (h * self.scale < height) self.oy = -(height / self.scale - h) / 2;
      };
      self.centerOn = function (node, scale) {
        const width = graphCanvas.clientWidth, height = graphCanvas.clientHeight;
        if (scale) self.scale = scale;
        self.ox = xs[node] - width / 2 / self.scale;
        self.oy = ys[node] - height / 2 / self.scale;
      };
      self.nodeColour = function (node) {
        const indices = nodeOutputs.get(node);
        if (!indices) return NOT_COMPARED;
        const outputs = current().outputs;
        if (colourMode.value === 'growth') {
          let growth = 0;
          for (const index of indices) growth = Math.max(growth, num(outputs[index].g) || 0);
          return growthColour(growth);
        }
        let worst = 0;
        for (const index of indices) worst = Math.max(worst, errorLevel(outputs[index]));
        return SCALE[worst].colour;
      };
      self.draw = function () {
        const {context: g, width, height} = setupCanvas(graphCanvas);
        g.fillStyle = '#fbfcfd';
        g.fillRect(0, 0, width, height);
        const s = self.scale, ox = self.ox, oy = self.oy;
        const x0 = ox - nodeWidth, x1 = ox + width / s + nodeWidth, y0 = oy - nodeHeight, y1 = oy + height / s + nodeHeight;
        const sx = (x) => (x - ox) * s, sy = (y) => (y - oy) * s;
        // edges whose box meets the view
        g.strokeStyle = s < 0.15 ? 'rgba(110,119,129,0.35)' : 'rgba(110,119,129,0.7)';
        g.lineWidth = s < 0.3 ? 0.6 : 1;
        // Zoomed out, straight edges and nodes filled colour by colour: one path per colour.
        const detailed = s >= 0.2;
        g.beginPath();
        for (let k = 0; k < edges.length; k += 2) {
          const a = edges[k], b = edges[k + 1];
          const ax = xs[a], ay = ys[a] + nodeHeight / 2, bx = xs[b], by = ys[b] - nodeHeight / 2;
          if (Math.max(ax, bx) < x0 || Math.min(ax, bx) > x1 || Math.max(ay, by) < y0 || Math.min(ay, by) > y1) continue;
          g.moveTo(sx(ax), sy(ay));
          if (detailed) {
            const bend = Math.min(40, Math.abs(by - ay) / 2);
            g.bezierCurveTo(sx(ax), sy(ay + bend), sx(bx), sy(by - bend), sx(bx), sy(by));
          } else {
            g.lineTo(sx(bx), sy(by));
          }
        }
        g.stroke();
        // nodes in view
        const first = lowerBound(y0), last = lowerBound(y1);
        const showText = s >= 0.45;
        // Far out, boxes keep a few pixels so that the graph still shows as a strip coloured by error.
        const w = Math.max(nodeWidth * s, 6), h = Math.max(nodeHeight * s, 2);
        g.textAlign = 'center';
        g.textBaseline = 'middle';
        let visible = 0;
        const marked = [];
        const byColour = new Map();
        for (let k = first; k < last; ++k) {
          const node = byY[k];
          const x = xs[node];
          if (x < x0 || x > x1) continue;
          ++visible;
          const left = sx(x) - w / 2, topY = sy(ys[node]) - h / 2;
          const colour = self.nodeColour(node);
          if (!detailed) {
            if (!byColour.has(colour)) byColour.set(colour, []);
            byColour.get(colour).push(left, topY);
          } else {
            g.fillStyle = colour;
            g.fillRect(left, topY, w, h);
            g.strokeStyle = 'rgba(31,35,40,0.35)'; g.lineWidth = 1; g.strokeRect(left, topY, w, h);
          }
          const indices = nodeOutputs.get(node);
          if (indices) for (const index of indices) {
            const o = current().outputs[index];
            if (o.fd || o.fg) marked.push({node, left, topY, output: o});
          }
          if (showText) {
            const chars = Math.max(4, Math.floor(w / (6.2 * Math.min(1.6, s))));
            const name = graph.name[node].length > chars ? graph.name[node].slice(0, chars - 1) + '\u2026' : graph.name[node];
            g.fillStyle = '#1f2328';
            g.font = `600 ${Math.round(11 * Math.min(1.6, s))}px system-ui, sans-serif`;
            g.fillText(graph.op[node], left + w / 2, topY + h * 0.33);
            g.font = `${Math.round(10 * Math.min(1.6, s))}px system-ui, sans-serif`;
            g.fillText(name, left + w / 2, topY + h * 0.72);
          }
        }
        for (const [colour, corners] of byColour) {
          g.fillStyle = colour;
          g.beginPath();
          for (let k = 0; k < corners.length; k += 2) g.rect(corners[k], corners[k + 1], w, h);
          g.fill();
        }
        // rings and labels on top: fastest growth (orange), first divergence (red), selection (blue)
        graphCanvas.dataset.marked = '';
        for (const m of marked) {
          const diverged = m.output.fd;
          g.lineWidth = diverged ? 3 : 2;
          g.strokeStyle = diverged ? '#cf222e' : '#bc4c00';
          g.strokeRect(m.left - 3, m.topY - 3, w + 6, h + 6);
          g.font = 'bold 11px system-ui, sans-serif';
          g.textAlign = 'left';
          const label = diverged ? '\u2691 first divergence' : `\u25b2${m.output.fg} error \u00d7${fmt(Math.pow(10, num(m.output.g)))}`;
          const labelWidth = g.measureText(label).width;
          g.fillStyle = 'rgba(255,255,255,0.9)';  // readable over neighbouring nodes
          g.fillRect(m.left + w + 4, m.topY + h / 2 - 8, labelWidth + 6, 16);
          g.fillStyle = g.strokeStyle;
          g.fillText(label, m.left + w + 7, m.topY + h / 2);
          g.textAlign = 'center';
          if (diverged) graphCanvas.dataset.marked = graph.name[m.node];
        }
        if (self.selectedNode >= 0) {
          const node = self.selectedNode;
          g.lineWidth = 2.5;
          g.strokeStyle = '#0969da';
          g.strokeRect(sx(xs[node]) - w / 2 - 6, sy(ys[node]) - h / 2 - 6, w + 12, h + 12);
        }
        g.lineWidth = 1;
        self.visible = visible;
      };
      self.nodeAt = function (px, py) {
        const x = px / self.scale + self.ox, y = py / self.scale + self.oy;
        const first = lowerBound(y - nodeHeight / 2), last = lowerBound(y + nodeHeight / 2 + 1e-9);
        for (let k = first; k < last; ++k) {
          const node = byY[k];
          if (Math.abs(xs[node] - x) <= nodeWidth / 2 && Math.abs(ys[node] - y) <= nodeHeight / 2) return node;
        }
        return -1;
      };

      // interaction: drag to pan, wheel to zoom at the pointer, click to select
      let drag = null;
      let frame = 0;
      const redraw = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; self.draw(); }); };
      graphCanvas.addEventListener('pointerdown', (event) => {
        drag = {x: event.clientX, y: event.clientY, ox: self.ox, oy: self.oy, moved: false};
        graphCanvas.setPointerCapture(event.pointerId);
      });
      graphCanvas.addEventListener('pointermove', (event) => {
        if (!drag) return;
        const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; graphCanvas.classList.add('dragging'); }
        self.ox = drag.ox - dx / self.scale;
        self.oy = drag.oy - dy / self.scale;
        redraw();
      });
      graphCanvas.addEventListener('pointerup', (event) => {
        graphCanvas.classList.remove('dragging');
        if (drag && !drag.moved) {
          const rect = graphCanvas.getBoundingClientRect();
          const node = self.nodeAt(event.clientX - rect.left, event.clientY - rect.top);
          if (node >= 0) selectNode(node, false);
        }
        drag = null;
      });
      graphCanvas.addEventListener('wheel', (event) => {
        event.preventDefault();
        const rect = graphCanvas.getBoundingClientRect();
        const px = event.clientX - rect.left, py = event.clientY - rect.top;
        const wx = px / self.scale + self.ox, wy = py / self.scale + self.oy;
        self.scale = Math.max(0.002, Math.min(4, self.scale * Math.exp(-event.deltaY * 0.0015)));
        self.ox = wx - px / self.scale;
        self.oy = wy - py / self.scale;
        redraw();
      }, {passive: false});
      self.redraw = redraw;
      return self;
    }

    function drawLegend() {
      clear(legend);
      if (colourMode.value === 'growth') {
        for (const [decades, label] of [[0, '\u00d71'], [1, '\u00d710'], [2, '\u00d7100'], [3, '\u2265 \u00d71000']])
          legend.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: `background:${growthColour(decades)}`}), label]));
      } else {
        for (const step of SCALE) legend.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: `background:${step.colour}`}), step.label]));
      }
      legend.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: `background:${NOT_COMPARED}`}), 'not compared']));
      legend.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: 'background:#fff;border:2px solid #cf222e'}), 'first divergence']));
      legend.append(el('span', {class: 'key'}, [el('span', {class: 'swatch', style: 'background:#fff;border:2px solid #bc4c00'}), 'fastest error growth']));
    }
    colourMode.addEventListener('change', () => { drawLegend(); if (view) view.draw(); });

    let searchFrom = 0;
    search.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter' || !graph) return;
      const query = search.value.trim().toLowerCase();
      if (!query) return;
      const count = graph.name.length;
      for (let step = 0; step < count; ++step) {
        const node = (searchFrom + step) % count;
        const haystack = [graph.name[node], graph.op[node], ...graph.out[node]].join('\n').toLowerCase();
        if (haystack.includes(query)) { searchFrom = node + 1; selectNode(node, true); return; }
      }
    });

    // ---- details panel
    function statRows(o) {
      const rows = [
        ['status', o.e ? 'not compared: ' + o.e : o.p ? 'passed' : 'FAILED'],
        ['compared with', o.o],
        ...(o.mk ? [['paired by', o.mk]] : []),
        ['max |a\u2212b|', fmt(o.ma)], ['mean |a\u2212b|', fmt(o.ea)], ['median |a\u2212b|', fmt(o.da)],
        ['max relative', fmt(o.mr)], ['mean relative', fmt(o.er)], ['median relative', fmt(o.dr)],
        ['checked', `${o.st} error, atol ${fmt(o.at)}, rtol ${fmt(o.rt)}`],
        ['required tolerance', `abs ${fmt(o.ra)} or rel ${fmt(o.rr)}`],
        ['error level', fmt(o.lv) + ' (mean |a\u2212b| / mean |b|)'],
        ['growth over inputs', fmtGrowth(o.g)],
      ];
      if (o.ty) rows.push(['type', o.ty2 ? `${o.ty} vs. ${o.ty2}` : o.ty]);
      return el('table', {}, rows.map(([key, value]) => el('tr', {}, [el('td', {text: key}), el('td', {text: value})])));
    }
    function outputBlock(index) {
      const c = current(), o = c.outputs[index];
      const title = el('h4', {}, ['output ', el('span', {class: 'mono', text: o.t})]);
      if (o.fd) title.append(el('span', {class: 'badge diverge', text: 'first divergence'}));
      if (o.fg) title.append(el('span', {class: 'badge grow', text: `\u25b2${o.fg} fastest growth`}));
      title.append(el('span', {class: 'badge ' + (o.p ? 'pass' : 'fail'), text: o.p ? 'passed' : 'failed'}));
      const block = el('div', {}, [title, statRows(o)]);
      if (o.va) {
        block.append(histogramSvg('values', [
          {hist: o.va, colour: '#0969da', label: c.first},
          {hist: o.vb, colour: '#bc4c00', label: c.second},
        ], false));
        block.append(el('div', {class: 'toolbar'}, [
          el('span', {class: 'key'}, [el('span', {class: 'swatch', style: 'background:#0969da'}), c.first]),
          el('span', {class: 'key'}, [el('span', {class: 'swatch', style: 'background:#bc4c00'}), c.second]),
        ]));
        block.append(histogramSvg('|a\u2212b|', [{hist: o.ha, colour: '#0969da', label: ''}], true));
        block.append(histogramSvg('|a\u2212b| / |b|', [{hist: o.hr, colour: '#bf3989', label: ''}], true));
      }
      return block;
    }
    // A tensor's type: declared in the model, else as compared.
    function tensorLine(name) {
      const compared = tensorOutputs.get(name);
      const info = (graph && graph.tensors[name]) || (compared && compared.ty) || '';
      return el('tr', {}, [el('td', {class: 'mono', text: name || '(none)'}), el('td', {text: info})]);
    }
    function showNode(node) {
      clear(details);
      details.append(el('h3', {text: graph.name[node]}), el('div', {}, [el('b', {text: graph.op[node]}), ` \u2022 node #${node}`]));
      const attrs = graph.attr[node];
      details.append(el('h4', {text: 'attributes'}));
      if (attrs.length) details.append(el('table', {}, attrs.map(([key, value]) => el('tr', {}, [el('td', {text: key}), el('td', {class: 'mono', text: value})]))));
      else details.append(el('div', {class: 'empty', text: 'none'}));
      details.append(el('h4', {text: 'inputs'}), el('table', {}, graph.in[node].map(tensorLine)));
      details.append(el('h4', {text: 'outputs'}), el('table', {}, graph.out[node].map(tensorLine)));
      const indices = nodeOutputs.get(node) || [];
      if (!indices.length) details.append(el('p', {class: 'empty', text: 'No output of this node was compared (use --onnx-outputs mark all to compare every layer).'}));
      for (const index of indices) details.append(outputBlock(index));
    }
    function showOutput(index) {
      clear(details);
      const o = current().outputs[index];
      details.append(el('h3', {text: o.t}), el('div', {class: 'empty', text: o.n >= 0 ? '' : 'not the output of a node of the graph'}));
      details.append(outputBlock(index));
    }
    function showNothing() {
      clear(details);
      details.append(el('p', {class: 'empty', text: 'Select an output in the profile or the table, or a node in the graph.'}));
    }

    // ---- table
    const columns = [
      {label: '#', numeric: true, value: (o, i) => i},
      {label: 'Output', value: (o) => o.t},
      {label: 'Op', value: (o) => o.op},
      {label: 'Status', value: (o) => (o.e ? 2 : o.p ? 0 : 1), text: (o) => (o.e ? 'error' : o.p ? 'passed' : 'FAILED'), cls: 'status'},
      {label: 'Max |a\u2212b|', numeric: true, value: (o) => num(o.ma)},
      {label: 'Mean |a\u2212b|', numeric: true, value: (o) => num(o.ea)},
      {label: 'Max rel', numeric: true, value: (o) => num(o.mr)},
      {label: 'Mean rel', numeric: true, value: (o) => num(o.er)},
      {label: 'Required atol', numeric: true, value: (o) => num(o.ra)},
      {label: 'Growth', numeric: true, value: (o) => num(o.g), text: (o) => fmtGrowth(o.g)},
    ];
    // Two graphs (debug diff): the other graph's tensor and how the two were paired, beside the output.
    if ((data.comparisons || []).some((c) => c.outputs.some((o) => o.mk))) {
      columns.splice(2, 0, {label: 'Compared with', value: (o) => o.o}, {label: 'Match', value: (o) => o.mk || ''});
    }
    let rows = [];
    let sort = {column: 0, descending: false};
    const head = el('tr');
    columns.forEach((column, index) => {
      const th = el('th', {class: column.numeric ? 'num' : '', text: column.label, scope: 'col'});
      th.addEventListener('click', () => {
        sort = {column: index, descending: sort.column === index ? !sort.descending : column.numeric && index > 0};
        sortRows();
      });
      head.append(th);
    });
    const tbody = el('tbody');
    table.append(el('thead', {}, [head]), tbody);
    // Rows are made in chunks after the first screenful, so that a report of thousands of outputs shows
    // at once; sorting, filtering or selecting a row not made yet makes the rest first.
    const FIRST_ROWS = 200, CHUNK_ROWS = 500;
    let made = 0, generation = 0;
    function makeRow(row) {
      const o = row.output, index = row.index;
      const tr = el('tr', {'data-tensor': o.t, class: (o.e || !o.p ? 'failed' : 'passed') + (o.fd ? ' first-divergence' : '') + (o.fg ? ' fastest' : '')});
      columns.forEach((column) => {
        const td = el('td', {class: (column.numeric ? 'num ' : '') + (column.cls || '')});
        td.textContent = column.text ? column.text(o) : column.numeric && column.label !== '#' ? fmt(column.value(o, index)) : column.value(o, index);
        tr.append(td);
      });
      const nameCell = tr.children[1];
      nameCell.title = o.t;
      if (o.fd) nameCell.append(el('span', {class: 'badge diverge', text: 'first divergence'}));
      if (o.fg) nameCell.append(el('span', {class: 'badge grow', text: '\u25b2' + o.fg}));
      tr.addEventListener('click', () => select(index, true));
      if (index === state.selected) tr.classList.add('selected');
      row.tr = tr;
      return tr;
    }
    function makeRows(count) {
      const fragment = document.createDocumentFragment();
      const end = Math.min(rows.length, made + count);
      for (; made < end; ++made) fragment.append(makeRow(rows[made]));
      tbody.append(fragment);
      applyFilter();
    }
    function makeAllRows() {
      if (made < rows.length) makeRows(rows.length - made);
    }
    function buildRows() {
      const outputs = current().outputs;
      rows = outputs.map((o, index) => ({tr: null, index, output: o, search: (o.t + '\n' + o.op + '\n' + o.nn).toLowerCase()}));
      made = 0;
      const mine = ++generation;
      clear(tbody);
      table.dataset.outputCount = String(outputs.length);
      makeRows(FIRST_ROWS);
      const more = () => {
        if (mine !== generation || made >= rows.length) return;
        makeRows(CHUNK_ROWS);
        setTimeout(more, 0);
      };
      setTimeout(more, 0);
    }
    function sortRows() {
      makeAllRows();
      const column = columns[sort.column];
      const key = (row) => column.value(row.output, row.index);
      const sorted = rows.slice().sort((a, b) => {
        let x = key(a), y = key(b);
        if (typeof x === 'number' || typeof y === 'number') {
          x = Number.isNaN(x) ? Infinity : x;  // NaN errors sort with the worst
          y = Number.isNaN(y) ? Infinity : y;
          return (x === y ? a.index - b.index : x < y ? -1 : 1) * (sort.descending ? -1 : 1);
        }
        return String(x).localeCompare(String(y)) * (sort.descending ? -1 : 1) || a.index - b.index;
      });
      const fragment = document.createDocumentFragment();
      for (const row of sorted) fragment.append(row.tr);
      tbody.append(fragment);
      head.querySelectorAll('th').forEach((th, index) => {
        if (index === sort.column) th.setAttribute('aria-sort', sort.descending ? 'descending' : 'ascending');
        else th.removeAttribute('aria-sort');
      });
    }
    function applyFilter() {
      const query = filter.value.trim().toLowerCase();
      let shown = 0;
      for (const row of rows) {
        const visible = (!query || row.search.includes(query)) && (!failingOnly.checked || !row.output.p);
        if (row.tr) row.tr.hidden = !visible;
        if (visible) ++shown;
      }
      count.textContent = `${shown} of ${rows.length} output(s)`;
    }
    filter.addEventListener('input', () => { makeAllRows(); applyFilter(); });
    failingOnly.addEventListener('change', () => { makeAllRows(); applyFilter(); });
    function markSelectedRow() {
      const previous = tbody.querySelector('tr.selected');
      if (previous) previous.classList.remove('selected');
      const row = rows[state.selected];
      if (row && row.tr) row.tr.classList.add('selected');
      return row;
    }

    // ---- selection, shared by profile, table and graph
    function select(index, move) {
      state.selected = index;
      const o = current().outputs[index];
      if (move && index >= made) makeAllRows();
      const row = markSelectedRow();
      if (row && row.tr && move && !row.tr.hidden) row.tr.scrollIntoView({block: 'nearest'});
      if (view && o.n >= 0) {
        view.selectedNode = o.n;
        if (move) view.centerOn(o.n, Math.max(view.scale, 0.7));
        view.draw();
        showNode(o.n);
      } else {
        showOutput(index);
      }
      drawProfile();
    }
    function selectNode(node, move) {
      view.selectedNode = node;
      const indices = nodeOutputs.get(node);
      state.selected = indices ? indices[0] : -1;
      markSelectedRow();
      if (move) view.centerOn(node, Math.max(view.scale, 0.7));
      view.draw();
      showNode(node);
      drawProfile();
    }

    function showComparison(index) {
      state.comparison = index;
      state.selected = -1;
      indexOutputs();
      sort = {column: 0, descending: false};
      buildRows();
      head.querySelectorAll('th').forEach((th, index) => { if (index === 0) th.setAttribute('aria-sort', 'ascending'); else th.removeAttribute('aria-sort'); });
      showNothing();
      const outputs = current().outputs;
      let initial = outputs.findIndex((o) => o.fd);
      if (initial < 0) initial = outputs.findIndex((o) => o.fg === 1);
      if (view) {
        view.fit();
        if (initial >= 0 && outputs[initial].n >= 0) view.centerOn(outputs[initial].n, 0.9);
      }
      if (initial >= 0) select(initial, false);
      else { drawProfile(); if (view) view.draw(); }
    }
    picker.addEventListener('change', () => showComparison(Number(picker.value)));
    window.addEventListener('resize', () => { drawProfile(); if (view) view.draw(); });
    drawLegend();
    showComparison(0);
    if (view) body.dataset.graphNodesDrawn = String(view.visible);
    // Opened as report.html?bench (bench/report_render_time): time redraws of the whole graph in view.
    if (view && /[?&]bench\b/.test(window.location.search)) {
      view.fit();
      const times = [];
      for (let run = 0; run < 5; ++run) {
        const start = performance.now();
        view.draw();
        times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      body.dataset.fitDrawMs = times[2].toFixed(1);
      body.dataset.fitNodesDrawn = String(view.visible);
    }
  }

  // ---- data report (inspect data --report) -------------------------------------------------------------
  function dataPage() {
    const main = el('main');
    app.append(buildHeader(), main);
    if (data.runs.length === 0) {
      main.append(el('p', {class: 'empty', text: 'The file holds no data.'}));
      return;
    }
    const picker = el('select', {'aria-label': 'Runner and iteration'});
    data.runs.forEach((run, index) => picker.append(el('option', {value: index, text: `${run.runner} \u2022 iteration ${run.iteration}`})));
    const details = el('div', {class: 'panel', id: 'details'});
    const table = el('table', {class: 'outputs', id: 'outputs-table'});
    main.append(el('div', {class: 'toolbar'}, [el('label', {}, ['Data ', picker])]),
      el('div', {class: 'split'}, [el('div', {class: 'table-wrap'}, [table]), details]));
    const labels = ['Tensor', 'dtype', 'shape', 'mean', 'std-dev', 'min', 'max', 'median', 'NaN', 'inf'];
    table.append(el('thead', {}, [el('tr', {}, labels.map((label, index) => el('th', {class: index >= 3 ? 'num' : '', text: label})))]));
    const tbody = el('tbody');
    table.append(tbody);
    function showTensor(t) {
      clear(details);
      details.append(el('h3', {text: t.t}), el('div', {text: `${t.dt} ${t.sh}`}));
      if (t.va) {
        details.append(histogramSvg('values', [{hist: t.va, colour: '#0969da', label: ''}], false));
        details.append(el('table', {}, [['mean', t.mean], ['std-dev', t.std], ['min', t.min], ['max', t.max], ['median', t.med]]
          .map(([key, value]) => el('tr', {}, [el('td', {text: key}), el('td', {text: fmt(value)})]))));
      } else {
        details.append(el('p', {class: 'empty', text: 'No statistics for this type.'}));
      }
    }
    function showRun(index) {
      clear(tbody);
      const tensors = data.runs[index].tensors;
      tensors.forEach((t) => {
        const cells = [t.t, t.dt, t.sh, fmt(t.mean), fmt(t.std), fmt(t.min), fmt(t.max), fmt(t.med), t.nan === undefined ? '' : t.nan, t.inf === undefined ? '' : t.inf];
        const tr = el('tr', {'data-tensor': t.t}, cells.map((value, column) => el('td', {class: column >= 3 ? 'num' : '', text: value})));
        tr.addEventListener('click', () => {
          tbody.querySelectorAll('tr.selected').forEach((row) => row.classList.remove('selected'));
          tr.classList.add('selected');
          showTensor(t);
        });
        tbody.append(tr);
      });
      table.dataset.outputCount = String(tensors.length);
      if (tensors.length) showTensor(tensors[0]);
    }
    picker.addEventListener('change', () => showRun(Number(picker.value)));
    showRun(0);
  }

  if (data.kind === 'data') dataPage();
  else comparisonPage();
  body.dataset.firstRenderMs = performance.now().toFixed(1);
  body.dataset.status = 'ready';
})();
