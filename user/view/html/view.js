/* scalene-bpf HTML view: draws the profile model embedded in the page.  The
 * model comes from an untrusted profile, so every value is type-checked here
 * too, and text reaches the page only as text nodes and attribute values. */
(function () {
'use strict';

var SVGNS = 'http://www.w3.org/2000/svg';
var app = document.getElementById('app');
var tip = document.getElementById('tip');
var D = readModel();
var memOn = D.memory === true, gpuOn = D.gpu === true, churnOn = memOn && D.churn === true;
var gilOn = num(D.gil_s) > 0;
/* The await column: await profiling was on and some line or function
 * awaited (user/view/viewutil.c decides). */
var awaitOn = D.await === true;
var redraws = [];

function readModel() {
	try {
		var node = document.getElementById('profile-data');
		var d = JSON.parse(node ? node.textContent : '{}');
		return obj(d) || {};
	} catch (e) {
		console.error('the embedded profile is unreadable: ' + e);
		return {};
	}
}

/* ---- values ---- */
function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }
function str(v) { return typeof v === 'string' ? v : ''; }
function arr(v) { return Array.isArray(v) ? v : []; }
function obj(v) { return v && typeof v === 'object' && !Array.isArray(v) ? v : null; }
function base(p) {
	var s = str(p), i = s.lastIndexOf('/');
	return i >= 0 && i < s.length - 1 ? s.slice(i + 1) : s;
}
function pct(x) { return num(x).toFixed(1) + '%'; }
function fix(x, d) { return num(x).toFixed(d); }
function mb(x) {
	x = num(x);
	return (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2)) + ' MB';
}
function secs(x) {
	x = num(x);
	return x >= 10 ? x.toFixed(1) + ' s' : x >= 0.01 || x === 0 ? x.toFixed(2) + ' s' : (x * 1000).toFixed(2) + ' ms';
}
function count(x) { return Math.round(num(x)).toLocaleString('en-US'); }
function hash(s) {
	var h = 2166136261;
	for (var i = 0; i < s.length; i++) {
		h ^= s.charCodeAt(i);
		h = Math.imul(h, 16777619);
	}
	return h >>> 0;
}

/* ---- DOM ---- */
function add(e, kids) {
	if (kids === undefined || kids === null)
		return e;
	(Array.isArray(kids) ? kids : [kids]).forEach(function (k) {
		if (k !== null && k !== undefined && k !== '')
			e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
	});
	return e;
}
function el(tag, cls, kids) {
	var e = document.createElement(tag);
	if (cls)
		e.className = cls;
	return add(e, kids);
}
function sv(tag, attrs) {
	var e = document.createElementNS(SVGNS, tag);
	Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
	return e;
}
function clear(e) {
	while (e.firstChild)
		e.removeChild(e.firstChild);
}
function section(id, title) {
	var s = el('section', null, el('h2', null, title));
	s.id = id;
	app.appendChild(s);
	return s;
}
/* Draws one part of the page; a failure leaves the others standing. */
function guarded(what, fn) {
	try {
		fn();
	} catch (e) {
		app.appendChild(el('p', 'note', 'The ' + what + ' could not be drawn.'));
		console.error('drawing the ' + what + ': ' + (e && e.stack ? e.stack : e));
	}
}

/* ---- tooltip ---- */
function showTip(ev, parts) {
	clear(tip);
	add(tip, parts);
	tip.hidden = false;
	var x = ev.clientX + 14, y = ev.clientY + 14;
	if (x + tip.offsetWidth > window.innerWidth - 4)
		x = Math.max(4, ev.clientX - tip.offsetWidth - 14);
	if (y + tip.offsetHeight > window.innerHeight - 4)
		y = Math.max(4, ev.clientY - tip.offsetHeight - 14);
	tip.style.left = x + 'px';
	tip.style.top = y + 'px';
}
function hideTip() { tip.hidden = true; }

/* ---- the model's parts ---- */
var FILES = arr(D.files).map(obj).filter(Boolean);
var FRAMES = arr(D.frames);
var sources = new Map(); /* file -> Map(line -> source text) */
FILES.forEach(function (f) {
	var m = new Map();
	arr(f.lines).forEach(function (l) {
		if (obj(l))
			m.set(num(l.n), str(l.src));
	});
	sources.set(str(f.name), m);
});

/* Kernel frames (--native) are native frames of "[kernel]" or
 * "[kernel:module]". */
function frame(i) {
	var f = arr(FRAMES[i]), file = str(f[2]);
	var kind = f[0] !== 'native' ? 'py' : file.lastIndexOf('[kernel', 0) === 0 ? 'kernel' : 'native';
	return { kind: kind, name: str(f[1]), file: file, line: num(f[3]) };
}
function frameLabel(f) { return f.name || base(f.file) || (f.kind !== 'py' ? '[unknown native]' : '?'); }
function frameWhere(f) {
	if (f.kind === 'kernel')
		return f.file + ' (kernel)';
	if (f.kind === 'native')
		return (f.file || 'unknown module') + ' (native)';
	return (f.file || '?') + (f.line > 0 ? ':' + f.line : '');
}
function sourceAt(file, line) {
	var m = sources.get(file);
	return m && m.has(line) ? m.get(line) : '';
}

/* ---- header ---- */
function header() {
	var prog = str(D.program) || str(D.name) || 'a program';
	document.title = base(prog) + ' \u2013 profile';
	app.appendChild(el('h1', null, 'Profile of ' + prog));
	var facts = el('div', 'facts');
	function fact(k, v) { facts.appendChild(el('span', null, [k + ' ', el('b', null, v)])); }
	fact('elapsed', secs(D.elapsed));
	if (D.samples !== undefined)
		fact('samples', count(D.samples));
	if (D.sampled_s !== undefined)
		fact('sampled time', secs(D.sampled_s));
	if (gilOn)
		fact('GIL wait', secs(D.gil_s));
	fact('memory', memOn ? 'on' : 'off');
	if (memOn) {
		if (D.footprint_measured === false) {
			fact('peak footprint', 'not measured');
			fact('growth', 'not measured');
		} else {
			fact('peak footprint', mb(D.max_footprint_mb));
			fact('growth', fix(D.growth_rate, 1) + '%');
		}
		fact('allocation samples', count(D.alloc_samples));
		if (str(D.memory_attach))
			fact('attached', str(D.memory_attach));
		if (num(D.native_mb) > 0)
			fact('threads without Python', mb(D.native_mb));
	}
	fact('GPU', gpuOn ? 'on' + (str(D.gpu_device) ? ' (' + str(D.gpu_device) + ')' : '') +
		(str(D.gpu_method) === 'nvml-sampling' ? ', use sampled through NVML; no launch sites' : '') : 'off');
	if (D.async === true)
		fact('async', 'on');
	if (str(D.await_not_covered))
		fact('await time', 'not measured: ' + str(D.await_not_covered));
	else if (D.await_s !== undefined)
		fact('await time', secs(D.await_s));
	fact('profile', str(D.name) || '?');
	fact('written by', str(D.producer) || '?');
	app.appendChild(facts);
	var nav = el('nav');
	[['files', 'Lines'], ['gpu-lines', 'GPU launches'], ['cpu-flame', 'CPU flame graph'],
	 ['mem-flame', 'Memory flame graph'], ['gpu-flame', 'GPU flame graph'],
	 ['timeline', 'Timeline']].forEach(function (l) {
		if ((l[0] === 'mem-flame' && !obj(D.mem)) || (l[0] === 'gpu-flame' && !obj(D.gpu_flame)) ||
		    (l[0] === 'gpu-lines' && !arr(D.gpu_lines).length))
			return;
		var a = el('a', null, l[1]);
		a.href = '#' + l[0];
		nav.appendChild(a);
	});
	app.appendChild(nav);
}

function warnings() {
	var w = arr(D.warnings).filter(function (x) { return typeof x === 'string'; });
	if (!w.length)
		return;
	var box = el('div', 'quality', el('b', null, 'Warning'));
	box.id = 'warnings';
	var ul = el('ul');
	w.forEach(function (t) { ul.appendChild(el('li', null, t)); });
	box.appendChild(ul);
	app.appendChild(box);
}

function quality() {
	var q = arr(D.quality).filter(Array.isArray);
	if (!q.length)
		return;
	var box = el('div', 'quality', el('b', null, 'Data quality: the profiler lost or cut some data'));
	box.id = 'quality';
	var ul = el('ul');
	q.forEach(function (r) {
		ul.appendChild(el('li', null, [el('code', null, str(r[0])), ' = ' + count(r[1]) + ': ' + str(r[2])]));
	});
	box.appendChild(ul);
	app.appendChild(box);
}

/* ---- footer: what the profiler itself cost ---- */
function footer() {
	if (D.off_lines_note) {
		var o = el('p', 'note', D.off_lines_note.charAt(0).toUpperCase() +
			D.off_lines_note.slice(1) + '.');
		o.id = 'off-lines';
		app.appendChild(o);
	}
	if (!(num(D.probe_overhead_s) > 0))
		return;
	var p = el('p', 'note', 'Profiler overhead: ' + secs(D.probe_overhead_s) +
		' of CPU time in the profiler\u2019s probes, not counted in the lines\u2019 percentages.');
	p.id = 'probe-overhead';
	app.appendChild(p);
}

/* ---- line and function tables ---- */
function bar(parts) {
	var b = el('span', 'bar');
	parts.forEach(function (p) {
		var w = Math.max(0, Math.min(100, num(p[1])));
		if (w > 0) {
			var s = el('span', p[0]);
			s.style.width = w + '%';
			b.appendChild(s);
		}
	});
	return b;
}
function total(r) { return num(r.py) + num(r.c) + num(r.sys); }
/* A bar with its number beside it. */
function barCell(parts, value) { return el('span', 'barcell', [bar(parts), el('span', null, pct(value))]); }

function sparkline(series, leak) {
	var pts = arr(series).filter(function (p) { return Array.isArray(p) && p.length >= 2; });
	if (!pts.length)
		return null;
	var W = 100, H = 22, xmax = num(D.elapsed), ymax = num(D.max_footprint_mb);
	pts.forEach(function (p) {
		xmax = Math.max(xmax, num(p[0]));
		ymax = Math.max(ymax, num(p[1]));
	});
	xmax = xmax || 1;
	ymax = ymax || 1;
	var s = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'spark' });
	s.appendChild(sv('rect', { x: 0.5, y: 0.5, width: W - 1, height: H - 1, 'class': 'frame' }));
	var xy = pts.map(function (p) {
		return (1 + num(p[0]) / xmax * (W - 2)).toFixed(1) + ',' + (H - 1 - num(p[1]) / ymax * (H - 2)).toFixed(1);
	});
	if (xy.length === 1)
		xy.push(xy[0].replace(/^[^,]*/, function (x) { return String(Number(x) + 1.5); }));
	s.appendChild(sv('polyline', { points: xy.join(' ') }));
	if (leak === undefined)
		return s;
	return el('span', null, [s, el('span', 'leak', 'possible leak ' + fix(leak, 2) + ' MB/s')]);
}

/* The first few task names, then how many more (as the terminal says). */
function taskNames(r) {
	var names = arr(r.tasks).filter(function (t) { return typeof t === 'string'; });
	var more = num(r.tasks_more);
	return names.join(', ') + (more > 0 ? ' +' + count(more) + ' more' : '');
}
function concurrency(r) {
	if (!(num(r.cmean) > 0 || num(r.cpeak) > 0))
		return '';
	return fix(r.cmean, 1) + ' / ' + fix(r.cpeak, 0);
}

function columns(isFunc) {
	var c = [{ k: 'n', label: 'Line', v: function (r) { return num(r.n); }, dir: 1 }];
	if (isFunc)
		c.push({ k: 'name', cls: 'name', label: 'Function', v: function (r) { return str(r.name); }, dir: 1 });
	c.push({ k: 'time', label: 'Time', title: 'Python + native + system, % of all sampled time', v: total,
		 cell: function (r) {
			 return barCell([['py', r.py], ['c', r.c], ['sys', r.sys]], total(r));
		 } });
	c.push({ k: 'py', label: 'Python', v: function (r) { return num(r.py); }, show: function (r) { return pct(r.py); } });
	c.push({ k: 'c', label: 'Native', v: function (r) { return num(r.c); }, show: function (r) { return pct(r.c); } });
	c.push({ k: 'sys', label: 'System', v: function (r) { return num(r.sys); }, show: function (r) { return pct(r.sys); } });
	if (gilOn)
		c.push({ k: 'gil', label: 'GIL wait', title: 'of System: blocked waiting for the GIL, % of all sampled time',
			 v: function (r) { return num(r.gil); }, show: function (r) { return pct(r.gil); } });
	if (awaitOn) {
		c.push({ k: 'await', label: 'Await', title: 'share of all await time (tasks suspended here)',
			 v: function (r) { return num(r.await); }, show: function (r) { return pct(r.await); } });
		c.push({ k: 'tasks', label: 'Tasks waiting', title: 'asyncio tasks seen suspended here',
			 v: function (r) { return arr(r.tasks).length + num(r.tasks_more); }, show: taskNames });
		c.push({ k: 'conc', label: 'Concurrency', title: 'tasks suspended at the same moment: mean / peak',
			 v: function (r) { return num(r.cmean); }, show: concurrency });
	}
	if (memOn) {
		c.push({ k: 'avg', label: 'Avg MB', v: function (r) { return num(r.avg); }, show: function (r) { return fix(r.avg, 2); } });
		c.push({ k: 'peak', label: 'Peak MB', v: function (r) { return num(r.peak); }, show: function (r) { return fix(r.peak, 2); } });
		if (!isFunc)
			c.push({ k: 'timeline', label: 'Memory over time', nosort: true, v: function () { return 0; },
				 cell: function (r) { return sparkline(r.mem, typeof r.leak === 'number' ? r.leak : undefined); } });
		c.push({ k: 'usage', label: 'Memory %', title: 'share of the net growth of all lines', v: function (r) { return num(r.usage); },
			 cell: function (r) { return barCell([['mem', num(r.usage) * 100]], num(r.usage) * 100); } });
		if (churnOn)
			c.push({ k: 'churn', label: 'Churn MB', title: 'MB allocated, freed or not (the other memory columns: net growth, as in Scalene)',
				 v: function (r) { return num(r.churn); }, show: function (r) { return fix(r.churn, 1); } });
		c.push({ k: 'copy', label: 'Copy MB/s', v: function (r) { return num(r.copy); }, show: function (r) { return fix(r.copy, 1); } });
	}
	if (gpuOn) {
		c.push({ k: 'gpu', label: 'GPU %', v: function (r) { return num(r.gpu); },
			 cell: function (r) { return barCell([['gpu', r.gpu]], r.gpu); } });
		c.push({ k: 'gavg', label: 'GPU avg MB', v: function (r) { return num(r.gavg); }, show: function (r) { return fix(r.gavg, 1); } });
		c.push({ k: 'gpeak', label: 'GPU peak MB', v: function (r) { return num(r.gpeak); }, show: function (r) { return fix(r.gpeak, 1); } });
	}
	if (!isFunc)
		c.push({ k: 'src', cls: 'src', label: 'Source', v: function (r) { return str(r.src); }, dir: 1 });
	return c;
}

/* A table of rows, sorted by a click on a column's header (again: the
 * other way). */
function table(rows, cols, kind) {
	var t = el('table', 'lines ' + kind), head = el('tr'), body = el('tbody'), ths = [];
	var sortCol = -1, dir = 1;
	cols.forEach(function (c, i) {
		var th = el('th', c.cls || null, c.label);
		th.setAttribute('data-col', c.k);
		if (c.title)
			th.title = c.title;
		if (c.nosort)
			th.classList.add('nosort');
		else
			th.addEventListener('click', function () { sortBy(i); });
		ths.push(th);
		head.appendChild(th);
	});
	function fill(list) {
		clear(body);
		list.forEach(function (r) {
			var tr = el('tr');
			tr.setAttribute('data-n', String(num(r.n)));
			cols.forEach(function (c) {
				var td = el('td', c.cls || null);
				td.setAttribute('data-col', c.k);
				if (c.cell)
					add(td, c.cell(r));
				else
					td.textContent = c.show ? c.show(r) : String(c.v(r));
				tr.appendChild(td);
			});
			body.appendChild(tr);
		});
	}
	function sortBy(i) {
		var c = cols[i];
		dir = sortCol === i ? -dir : (c.dir || -1);
		sortCol = i;
		ths.forEach(function (th, j) {
			th.classList.remove('sorted-asc', 'sorted-desc');
			if (j === i)
				th.classList.add(dir > 0 ? 'sorted-asc' : 'sorted-desc');
		});
		fill(rows.slice().sort(function (a, b) {
			var x = c.v(a), y = c.v(b);
			return (x < y ? -1 : x > y ? 1 : 0) * dir || num(a.n) - num(b.n);
		}));
	}
	t.appendChild(el('thead', null, head));
	t.appendChild(body);
	fill(rows);
	return el('div', 'scroll', t);
}

function legend() {
	var l = el('div', 'legend note');
	[['py', 'Python'], ['c', 'native'], ['sys', 'system']].concat(memOn ? [['mem', 'memory']] : [])
		.concat(gpuOn ? [['gpu', 'GPU']] : []).forEach(function (p) {
			var i = el('i', 'bar-' + p[0]);
			i.style.background = 'var(--' + p[0] + ')';
			l.appendChild(el('span', null, [i, p[1]]));
		});
	return l;
}

function files() {
	var s = section('files', 'Lines');
	if (!FILES.length) {
		s.appendChild(el('p', 'note', 'No file of this profile reached the reporting threshold.'));
		return;
	}
	s.appendChild(legend());
	FILES.forEach(function (f, i) {
		var block = el('div', 'file');
		block.setAttribute('data-file', str(f.name));
		block.appendChild(el('h3', null, [str(f.name) || '?', el('span', 'note', ' \u2014 ' + pct(f.pct) + ' of the time')]));
		var lines = arr(f.lines).map(obj).filter(Boolean), hidden = num(f.hidden);
		block.appendChild(el('p', 'note', 'Showing ' + lines.length + ' of ' + count(f.nlines) + ' lines' +
			(hidden > 0 ? ': the ' + count(hidden) + ' under ' + num(D.threshold) + '% of the time' +
			 (memOn ? ' and without memory activity' : '') + ' are left out.' : '.')));
		if (lines.length)
			block.appendChild(table(lines, columns(false), 'profile-lines'));
		var funcs = arr(f.funcs).map(obj).filter(Boolean);
		if (funcs.length) {
			block.appendChild(el('h3', null, 'Functions of ' + (base(f.name) || '?')));
			block.appendChild(table(funcs, columns(true), 'profile-functions'));
		}
		block.id = 'file-' + i;
		s.appendChild(block);
	});
	if (num(D.files_omitted) > 0)
		s.appendChild(el('p', 'note', count(D.files_omitted) + ' files with less time are left out.'));
}

/* ---- GPU work by the line that launched it ---- */
/* As the terminal writes them: MB with one decimal (two digits under 0.1),
 * seconds in s, ms or us. */
function gpuMB(x) {
	x = num(x);
	return x >= 0.1 ? x.toFixed(1) : String(Number(x.toPrecision(2)));
}
function gpuSecs(x) {
	x = num(x);
	if (!(x > 0))
		return '';
	return x >= 1 ? x.toFixed(2) + ' s' : x >= 1e-3 ? (x * 1e3).toFixed(1) + ' ms' : (x * 1e6).toFixed(1) + ' us';
}
var GPU_DIRS = ['htod', 'dtoh', 'dtod', 'other'];
function gpuCopies(r) {
	var c = obj(r.copy_mb) || {};
	return GPU_DIRS.filter(function (d) { return num(c[d]) > 0; })
		.map(function (d) { return gpuMB(c[d]) + ' ' + d; }).join(', ');
}
function gpuLines() {
	var rows = arr(D.gpu_lines).map(obj).filter(Boolean);
	if (!rows.length)
		return;
	var s = section('gpu-lines', 'GPU work by the line that launched it');
	var total = num(D.gpu_lines_total);
	s.appendChild(el('p', 'note', (total > rows.length ? 'The ' + rows.length + ' of ' + count(total) +
		' lines with the most GPU time' : 'Most GPU time first') +
		': the kernels, copies and device memory that the CUDA calls made on each line caused.'));
	/* A file by its base name, unless another listed file has the same one. */
	function where(r) {
		var f = str(r.file), b = base(f);
		var clash = rows.some(function (o) { return str(o.file) !== f && base(o.file) === b; });
		return (clash || !b ? f : b) + ':' + num(r.line);
	}
	rows.forEach(function (r, i) { r.n = i + 1; });
	s.appendChild(table(rows, [
		{ k: 'where', cls: 'name', label: 'File:line', v: where, dir: 1,
		  cell: function (r) { var e = el('span', null, where(r)); e.title = str(r.file); return e; } },
		{ k: 'calls', label: 'Calls', title: 'CUDA calls made on the line',
		  v: function (r) { return num(r.calls); }, show: function (r) { return count(r.calls); } },
		{ k: 'kernels', label: 'Kernels', v: function (r) { return num(r.kernels); },
		  show: function (r) { return num(r.kernels) > 0 ? count(r.kernels) : ''; } },
		{ k: 'kernel_s', label: 'Kernel time', title: 'time the line\u2019s kernels ran on the GPU',
		  v: function (r) { return num(r.kernel_s); }, show: function (r) { return gpuSecs(r.kernel_s); } },
		{ k: 'copy', label: 'Copy MB', title: 'by direction: host to device, device to host, device to device, other',
		  v: function (r) { var c = obj(r.copy_mb) || {}; return GPU_DIRS.reduce(function (a, d) { return a + num(c[d]); }, 0); },
		  show: gpuCopies },
		{ k: 'alloc', label: 'Alloc MB', title: 'device memory allocated',
		  v: function (r) { return num(r.alloc_mb); }, show: function (r) { return num(r.alloc_mb) > 0 ? gpuMB(r.alloc_mb) : ''; } },
		{ k: 'src', cls: 'src', label: 'Source', v: function (r) { return str(r.src); }, dir: 1,
		  show: function (r) { return str(r.src).trim(); } }], 'gpu-lines'));
}

/* ---- flame graphs ---- */
function buildTree(set) {
	var root = { f: null, w: 0, kids: new Map(), parent: null };
	arr(set.stacks).forEach(function (s) {
		if (!Array.isArray(s) || !(num(s[1]) > 0))
			return;
		var w = num(s[1]), node = root;
		root.w += w;
		arr(s[0]).forEach(function (fi) {
			if (typeof fi !== 'number')
				return;
			var k = node.kids.get(fi);
			if (!k) {
				k = { f: frame(fi), w: 0, kids: new Map(), parent: node };
				node.kids.set(fi, k);
			}
			k.w += w;
			node = k;
		});
	});
	return root;
}

function flameColor(n, palette) {
	if (!n.f)
		return '#b4bcc4';
	var h = hash(n.f.name + '\u0000' + n.f.file);
	if (palette === 'mem')
		return 'hsl(' + (95 + h % 50) + ',50%,' + (52 + (h >> 8) % 14) + '%)';
	if (palette === 'gpu')
		return 'hsl(' + (265 + h % 45) + ',55%,' + (62 + (h >> 8) % 14) + '%)';
	if (n.f.kind === 'native')
		return 'hsl(' + (190 + h % 35) + ',60%,' + (60 + (h >> 8) % 14) + '%)';
	if (n.f.kind === 'kernel')
		return 'hsl(' + (200 + h % 20) + ',8%,' + (62 + (h >> 8) % 14) + '%)';
	return 'hsl(' + (12 + h % 38) + ',85%,' + (58 + (h >> 8) % 14) + '%)';
}

function flameGraph(id, title, set, palette) {
	var s = section(id, title);
	set = obj(set);
	if (!set || !arr(set.stacks).length) {
		s.appendChild(el('p', 'note', 'This profile has no stacks for it.'));
		return;
	}
	var root = buildTree(set), unit = str(set.unit) || 'samples';
	var all = num(set.total) || root.w || 1, focus = root;
	function amount(w) {
		return (unit === 'MB' ? mb(w) : unit === 's' ? secs(w) : count(w) + ' ' + unit) +
			' (' + pct(w / all * 100) + ')';
	}
	s.appendChild(el('p', 'note', 'From ' + (str(set.from) || 'the stacks') + ': ' + count(set.count) + ' stacks, ' +
		amount(all).replace(/ \(.*\)$/, '') + '. Root at the top; a frame\u2019s width is its share. ' +
		'Click a frame to zoom in, the top bar to zoom out.'));
	if (num(set.omitted) > 0) {
		var note = el('p', 'note omitted', 'The ' + count(set.omitted) + ' lightest stacks (' + amount(set.omitted_w) +
			') are left out; the ' + arr(set.stacks).length + ' heaviest are drawn.');
		s.appendChild(note);
	}
	var holder = el('div', 'flame-holder');
	s.appendChild(holder);

	function tipFor(n) {
		if (!n.f)
			return [el('b', null, 'all stacks'), '\n' + amount(n.w)];
		var src = n.f.kind === 'py' ? sourceAt(n.f.file, n.f.line).trim() : '';
		return [el('b', null, frameLabel(n.f)), '\n' + frameWhere(n.f) + '\n' + amount(n.w),
			src ? el('div', 'code', src) : null];
	}
	function draw() {
		var W = Math.max(300, (holder.clientWidth || app.clientWidth || 1000) - 2), ROW = 18;
		var items = [], chain = [], a, depth = 0;
		for (a = focus; a; a = a.parent)
			chain.unshift(a);
		chain.forEach(function (n, i) { items.push({ n: n, x: 0, w: W, d: i }); });
		var scale = W / (focus.w || 1);
		(function walk(n, x, d) {
			Array.from(n.kids.values()).sort(function (p, q) { return q.w - p.w; }).forEach(function (k) {
				var w = k.w * scale;
				if (w >= 0.5 && d < 300) {
					items.push({ n: k, x: x, w: w, d: d });
					walk(k, x, d + 1);
				}
				x += w;
			});
		})(focus, 0, chain.length);
		items.forEach(function (it) { depth = Math.max(depth, it.d); });
		var svg = sv('svg', { width: W, height: (depth + 1) * ROW + 1, 'class': 'flame' });
		items.forEach(function (it) {
			var g = sv('g', { 'class': 'frame' + (it.n === focus ? ' focus' : '') });
			var f = it.n.f;
			g.setAttribute('data-name', f ? f.name : 'all');
			if (f) {
				g.setAttribute('data-file', f.file);
				g.setAttribute('data-line', String(f.line));
				g.setAttribute('data-kind', f.kind);
			}
			g.setAttribute('data-weight', String(it.n.w));
			g.setAttribute('data-depth', String(it.d));
			g.appendChild(sv('rect', { x: it.x.toFixed(2), y: it.d * ROW, width: Math.max(0.5, it.w - 0.5).toFixed(2),
						   height: ROW - 1, rx: 2, fill: flameColor(it.n, palette) }));
			var label = f ? frameLabel(f) : 'all', chars = Math.floor((it.w - 6) / 6.7);
			if (chars >= 3) {
				var t = sv('text', { x: (it.x + 3).toFixed(2), y: it.d * ROW + 12.5 });
				t.textContent = label.length > chars ? label.slice(0, chars - 1) + '\u2026' : label;
				g.appendChild(t);
			}
			g.addEventListener('mousemove', function (ev) { showTip(ev, tipFor(it.n)); });
			g.addEventListener('mouseleave', hideTip);
			g.addEventListener('click', function () {
				focus = it.n === focus && focus.parent ? focus.parent : it.n;
				hideTip();
				draw();
			});
			svg.appendChild(g);
		});
		clear(holder);
		holder.appendChild(svg);
	}
	draw();
	redraws.push(draw);
}

/* ---- timeline ---- */
function timeline() {
	var s = section('timeline', 'Timeline');
	var fp = arr(D.footprint).filter(function (p) { return Array.isArray(p) && p.length >= 2; });
	var ev = arr(D.timeline).filter(function (e) { return Array.isArray(e) && e.length >= 3; });
	/* Tracks: garbage collection, blocked in I/O, waiting for the GIL, all
	 * threads on one row each (scalene_bpf.tracks). */
	var TRACKS = [['gc', 'GC', '#d9534f'], ['io', 'I/O', '#2a9d8f'], ['gil', 'GIL wait', '#8e6bbf'],
		['gil_held', 'GIL held', '#c9a227']];
	var tv = arr(D.tracks).filter(function (e) { return Array.isArray(e) && e.length >= 4; });
	var rows = TRACKS.filter(function (k) { return tv.some(function (e) { return e[0] === k[0]; }); });
	if (!fp.length && !ev.length) {
		s.appendChild(el('p', 'note', 'This profile has no timeline: no memory footprint samples and no stack timeline.'));
		return;
	}
	var T = num(D.elapsed);
	fp.forEach(function (p) { T = Math.max(T, num(p[0])); });
	ev.forEach(function (e) { T = Math.max(T, num(e[0])); });
	tv.forEach(function (e) { T = Math.max(T, num(e[3])); });
	T = T || 1;
	var holder = el('div', 'timeline-holder');
	var stacks = arr(obj(D.cpu) ? D.cpu.stacks : null);
	/* A run is named by its innermost Python frame (else its leaf). */
	function leafOf(si) {
		var st = Array.isArray(stacks[si]) ? arr(stacks[si][0]) : [], i;
		for (i = st.length - 1; i >= 0; i--)
			if (frame(st[i]).kind === 'py')
				return frame(st[i]);
		return st.length ? frame(st[st.length - 1]) : null;
	}
	/* Per thread, a run lasts until that thread's next later event. */
	var lanes = [], laneOf = new Map();
	ev.forEach(function (e) {
		var key = String(num(e[3]));
		if (!laneOf.has(key)) {
			if (lanes.length < 8) {
				laneOf.set(key, lanes.length);
				lanes.push([]);
			} else {
				laneOf.set(key, lanes.length - 1);
			}
		}
		lanes[laneOf.get(key)].push(e);
	});
	function draw() {
		var W = Math.max(300, (holder.clientWidth || app.clientWidth || 1000) - 2), L = 64, R = 10;
		var PW = W - L - R, FH = fp.length ? 120 : 0, LH = 16, top = 8;
		var TH = 8, tracksH = rows.length * (TH + 3);
		var H = top + FH + (fp.length ? 10 : 0) + tracksH + lanes.length * (LH + 2) + 22;
		var svg = sv('svg', { width: W, height: H, 'class': 'chart' });
		function X(t) { return L + num(t) / T * PW; }
		if (fp.length) {
			var ymax = num(D.max_footprint_mb);
			fp.forEach(function (p) { ymax = Math.max(ymax, num(p[1])); });
			ymax = ymax || 1;
			var Y = function (v) { return top + FH - num(v) / ymax * FH; };
			var d = 'M' + X(fp[0][0]).toFixed(1) + ',' + Y(0).toFixed(1);
			fp.forEach(function (p) { d += 'L' + X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1); });
			d += 'L' + X(fp[fp.length - 1][0]).toFixed(1) + ',' + Y(0).toFixed(1) + 'Z';
			svg.appendChild(sv('line', { x1: L, y1: top + FH, x2: L + PW, y2: top + FH, 'class': 'axis' }));
			var area = sv('path', { d: d, fill: 'var(--mem)', 'fill-opacity': 0.35, stroke: 'var(--mem)', 'class': 'footprint' });
			svg.appendChild(area);
			var yl = sv('text', { x: 4, y: top + 10 });
			yl.textContent = mb(ymax);
			svg.appendChild(yl);
			var yl0 = sv('text', { x: 4, y: top + FH });
			yl0.textContent = 'footprint';
			svg.appendChild(yl0);
			var hit = sv('rect', { x: L, y: top, width: PW, height: FH, fill: 'transparent' });
			hit.addEventListener('mousemove', function (e) {
				var t = (e.clientX - svg.getBoundingClientRect().left - L) / PW * T, best = fp[0];
				fp.forEach(function (p) { if (Math.abs(num(p[0]) - t) < Math.abs(num(best[0]) - t)) best = p; });
				showTip(e, [el('b', null, mb(best[1])), ' process footprint at ' + secs(best[0])]);
			});
			hit.addEventListener('mouseleave', hideTip);
			svg.appendChild(hit);
		}
		var yt = top + FH + (fp.length ? 10 : 0);
		rows.forEach(function (k, ri) {
			var y = yt + ri * (TH + 3);
			var lt = sv('text', { x: 4, y: y + TH });
			lt.textContent = k[1];
			svg.appendChild(lt);
			tv.forEach(function (e) {
				if (e[0] !== k[0])
					return;
				var t0 = num(e[2]), t1 = Math.max(num(e[3]), t0);
				var r = sv('rect', { x: X(t0).toFixed(2), y: y, width: Math.max(1, X(t1) - X(t0)).toFixed(2), height: TH,
						     fill: k[2], 'class': 'track track-' + k[0] });
				r.addEventListener('mousemove', function (m) {
					showTip(m, [el('b', null, k[1]), '\n' + secs(t1 - t0) + ' from ' + secs(t0) + ', thread ' + num(e[1]) +
						    (e[4] ? '\n' + e[4] + ':' + num(e[5]) : '')]);
				});
				r.addEventListener('mouseleave', hideTip);
				svg.appendChild(r);
			});
		});
		var y0 = yt + tracksH;
		lanes.forEach(function (lane, li) {
			var y = y0 + li * (LH + 2);
			var lt = sv('text', { x: 4, y: y + 12 });
			lt.textContent = lanes.length > 1 ? 'thread ' + (li + 1) : 'stacks';
			svg.appendChild(lt);
			var sorted = lane.slice().sort(function (a, b) { return num(a[0]) - num(b[0]); }), j = 0;
			sorted.forEach(function (e, i) {
				var t0 = num(e[0]), t1 = T;
				if (j <= i)
					j = i + 1;
				while (j < sorted.length && num(sorted[j][0]) <= t0)
					j++;
				if (j < sorted.length)
					t1 = num(sorted[j][0]);
				var si = num(e[1]), f = si >= 0 ? leafOf(si) : null;
				var r = sv('rect', { x: X(t0).toFixed(2), y: y, width: Math.max(0.5, X(t1) - X(t0)).toFixed(2), height: LH,
						     fill: f ? flameColor({ f: f }, 'cpu') : '#b4bcc4', 'class': 'run' });
				r.setAttribute('data-name', f ? f.name : '');
				r.addEventListener('mousemove', function (m) {
					showTip(m, [el('b', null, f ? frameLabel(f) : '(a stack left out)'),
						    (f ? '\n' + frameWhere(f) : '') + '\nat ' + secs(t0) + ', ' + count(e[2]) + ' samples']);
				});
				r.addEventListener('mouseleave', hideTip);
				svg.appendChild(r);
			});
		});
		var ya = H - 6;
		[0, 0.5, 1].forEach(function (q) {
			var t = sv('text', { x: (L + q * PW - (q === 1 ? 40 : q === 0.5 ? 16 : 0)).toFixed(1), y: ya });
			t.textContent = secs(q * T);
			svg.appendChild(t);
		});
		clear(holder);
		holder.appendChild(svg);
	}
	var what = [];
	if (fp.length)
		what.push('the process\u2019s memory footprint (MB)');
	if (rows.length)
		what.push('when threads ' + rows.map(function (k) {
			return k[0] === 'gc' ? 'collected garbage' : k[0] === 'io' ? 'were blocked in I/O' :
				k[0] === 'gil' ? 'waited for the GIL' : 'ran holding the GIL';
		}).join(', ') + ' (one row each)');
	if (ev.length)
		what.push('the innermost Python function of each run of CPU samples' + (lanes.length > 1 ? ', one band per thread' : ''));
	s.appendChild(el('p', 'note', 'Over the ' + secs(T) + ' of the run: ' + what.join('; ') + '.' +
		(num(D.timeline_omitted) > 0 ? ' The last ' + count(D.timeline_omitted) + ' events are left out.' : '')));
	s.appendChild(holder);
	draw();
	redraws.push(draw);
}

/* ---- the page of a system-wide run (scalene-bpf view --html DIR) ---- */
function hostHeader() {
	var host = str(D.host) || '?';
	document.title = host + ' \u2013 processes';
	app.appendChild(el('h1', null, 'Processes profiled on ' + host));
	var facts = el('div', 'facts');
	function fact(k, v) { facts.appendChild(el('span', null, [k + ' ', el('b', null, v)])); }
	fact('kernel', str(D.kernel) || '?');
	fact('elapsed', secs(D.elapsed));
	fact('sampling rate', count(D.rate) + ' Hz');
	if (num(D.start) > 0)
		fact('started', new Date(num(D.start) * 1000).toLocaleString());
	fact('profiled', count(D.profiled));
	var why = arr(D.counts).filter(Array.isArray).map(function (c) { return str(c[0]) + ' ' + count(c[1]); });
	fact('not profiled', count(D.not_profiled) + (why.length ? ' (' + why.join(', ') + ')' : ''));
	fact('CPU sampled', secs(D.cpu_s));
	if (str(D.memory))
		fact('memory', str(D.memory));
	fact('index', str(D.name) || '?');
	app.appendChild(facts);
}
/* A process's page: a file beside this one, named by us from a checked
 * file name, and quoted as one path segment all the same. */
function procLink(r) {
	if (str(r.page)) {
		var a = el('a', null, str(r.profile) || str(r.page));
		a.href = encodeURIComponent(str(r.page));
		return a;
	}
	return el('span', 'problem', [str(r.profile) ? str(r.profile) + ': ' : '', str(r.problem) || 'no page']);
}
function hostProcesses() {
	var s = section('processes', 'Processes by CPU time');
	var rows = arr(D.procs).map(obj).filter(Boolean);
	if (!rows.length) {
		s.appendChild(el('p', 'note', 'No process was profiled.'));
		return;
	}
	s.appendChild(legend());
	var ns = rows.some(function (r) { return num(r.ns_pid) !== num(r.pid); });
	var c = [{ k: 'n', label: '#', v: function (r) { return num(r.n); }, dir: 1 },
		 { k: 'pid', label: 'PID', v: function (r) { return num(r.pid); }, dir: 1 }];
	if (ns)
		c.push({ k: 'ns_pid', label: 'NS PID', title: 'the PID in the process\u2019s own namespace', dir: 1,
			 v: function (r) { return num(r.ns_pid); },
			 show: function (r) { return num(r.ns_pid) !== num(r.pid) ? String(num(r.ns_pid)) : ''; } });
	c.push({ k: 'cmd', cls: 'name', label: 'Command', v: function (r) { return str(r.cmd); }, dir: 1 });
	c.push({ k: 'python', label: 'Version', title: 'Python version', v: function (r) { return str(r.python); }, dir: 1 });
	c.push({ k: 'cpu', label: 'CPU s', v: function (r) { return num(r.cpu); }, show: function (r) { return fix(r.cpu, 2); } });
	c.push({ k: 'total', label: 'Share', title: 'Python + native + system, % of the CPU time of all profiled processes',
		 v: function (r) { return num(r.total); },
		 cell: function (r) { return barCell([['py', r.py], ['c', r.c], ['sys', r.sys]], r.total); } });
	c.push({ k: 'py', label: 'Python', v: function (r) { return num(r.py); }, show: function (r) { return pct(r.py); } });
	c.push({ k: 'c', label: 'Native', v: function (r) { return num(r.c); }, show: function (r) { return pct(r.c); } });
	c.push({ k: 'sys', label: 'System', v: function (r) { return num(r.sys); }, show: function (r) { return pct(r.sys); } });
	if (rows.some(function (r) { return num(r.await) > 0; }))
		c.push({ k: 'await', label: 'Await s', title: 'event-loop idle time credited to the awaits of its tasks',
			 v: function (r) { return num(r.await); },
			 show: function (r) { return num(r.await) > 0 ? fix(r.await, 2) : ''; } });
	c.push({ k: 'peak', label: 'Peak RSS MB', v: function (r) { return typeof r.peak === 'number' ? r.peak : -1; },
		 show: function (r) { return typeof r.peak === 'number' ? fix(r.peak, 1) : '?'; } });
	c.push({ k: 'samples', label: 'Samples', v: function (r) { return num(r.samples); }, show: function (r) { return count(r.samples); } });
	c.push({ k: 'exit', label: 'Exit', v: function (r) { return str(r.exit); }, dir: 1 });
	c.push({ k: 'profile', cls: 'name', label: 'Profile', v: function (r) { return str(r.profile); }, dir: 1, cell: procLink });
	s.appendChild(table(rows, c, 'host-procs'));
	var index = str(D.name), dir = index.lastIndexOf('/') > 0 ? index.slice(0, index.lastIndexOf('/')) : 'DIR';
	s.appendChild(el('p', 'note', 'Each profile opens on its own page; in a terminal: scalene-bpf view ' +
		dir + '/<profile>.'));
}
function hostSkipped() {
	var rows = arr(D.skipped).map(obj).filter(Boolean);
	if (!rows.length)
		return;
	var s = section('not-profiled', 'Not profiled');
	s.appendChild(table(rows.map(function (r, i) { r.n = i + 1; return r; }), [
		{ k: 'pid', label: 'PID', v: function (r) { return num(r.pid); }, dir: 1 },
		{ k: 'cmd', cls: 'name', label: 'Command', v: function (r) { return str(r.cmd); }, dir: 1 },
		{ k: 'reason', cls: 'name', label: 'Why', v: function (r) { return str(r.reason); }, dir: 1 }], 'host-skipped'));
}

if (D.kind === 'host') {
	guarded('header', hostHeader);
	guarded('warnings', warnings);
	guarded('process table', hostProcesses);
	guarded('table of processes not profiled', hostSkipped);
} else {
	guarded('header', header);
	guarded('warnings', warnings);
	guarded('data quality note', quality);
	guarded('line tables', files);
	guarded('table of GPU launches', gpuLines);
	guarded('CPU flame graph', function () { flameGraph('cpu-flame', 'CPU flame graph', D.cpu, 'cpu'); });
	if (obj(D.mem))
		guarded('memory flame graph', function () { flameGraph('mem-flame', 'Memory flame graph', D.mem, 'mem'); });
	if (obj(D.gpu_flame))
		guarded('GPU flame graph', function () {
			flameGraph('gpu-flame', 'GPU flame graph: device time by the stack that launched it', D.gpu_flame,
				   'gpu');
		});
	guarded('timeline', timeline);
	guarded('footer', footer);
}

var pending = 0;
window.addEventListener('resize', function () {
	clearTimeout(pending);
	pending = setTimeout(function () {
		redraws.forEach(function (f) { guarded('resized view', f); });
	}, 150);
});
document.body.setAttribute('data-ready', '1');
})();
