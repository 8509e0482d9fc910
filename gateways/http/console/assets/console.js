// AeroStream console: fetches the REST admin API under /api/ and draws the
// page. Names, keys, values and headers are user data, so they only ever
// enter the page through textContent, setAttribute and encodeURIComponent,
// never as markup.
(function () {
  'use strict';

  var body = document.body;

  // ---- DOM helpers ------------------------------------------------------

  // el builds an element; attrs are set with setAttribute (or as
  // properties for on* handlers given as functions), children are nodes or
  // strings (as text).
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (typeof v === 'function') e.addEventListener(k, v);
        else e.setAttribute(k, v === true ? '' : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) append(e, arguments[i]);
    return e;
  }

  function append(parent, c) {
    if (c === undefined || c === null) return;
    if (Array.isArray(c)) { c.forEach(function (x) { append(parent, x); }); return; }
    parent.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }

  function $(id) { return document.getElementById(id); }

  function fill(id) {
    var box = $(id);
    box.classList.remove('loading');
    box.textContent = '';
    for (var i = 1; i < arguments.length; i++) append(box, arguments[i]);
  }

  // table draws rows under columns; a column is {title, cell(row) ->
  // node|string, num?: true}.
  function table(cls, columns, rows, empty) {
    if (!rows || rows.length === 0) return el('p', { 'class': 'empty' }, empty || 'None.');
    var head = el('tr', null, columns.map(function (c) {
      return el('th', c.num ? { 'class': 'num' } : null, c.title);
    }));
    var trs = rows.map(function (r) {
      return el('tr', null, columns.map(function (c) {
        var v = c.cell(r);
        return el('td', { 'class': c.num ? 'num' : null, 'data-col': c.key || null }, v === undefined || v === null ? '' : v);
      }));
    });
    return el('table', { 'class': cls }, el('thead', null, head), el('tbody', null, trs));
  }

  function link(href, text) { return el('a', { href: href }, text); }
  function topicHref(t) { return '/topics/' + encodeURIComponent(t); }
  function groupHref(g) { return '/groups/' + encodeURIComponent(g); }

  function fmtBytes(n) {
    if (typeof n !== 'number') return '';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    var i = 0, v = n;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    var s = i === 0 ? String(v) : v.toFixed(v < 10 ? 2 : 1);
    return el('span', { title: n + ' bytes' }, s + ' ' + units[i]);
  }

  function fmtTime(ms) {
    if (typeof ms !== 'number' || ms < 0) return '';
    return new Date(ms).toISOString().replace('.000Z', 'Z');
  }

  function fmtAgo(ms) {
    if (typeof ms !== 'number' || ms <= 0) return 'never';
    var s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    var ago = s < 120 ? s + ' s ago' : s < 7200 ? Math.round(s / 60) + ' min ago' : Math.round(s / 3600) + ' h ago';
    return el('span', { title: fmtTime(ms) }, ago);
  }

  function yesNo(b) { return b ? 'yes' : 'no'; }
  function ids(list) { return (list || []).join(', '); }

  // ---- API --------------------------------------------------------------

  // api calls the REST admin API and resolves to its JSON (null for 204);
  // a 4xx or 5xx rejects with the API's own message.
  function api(method, path, payload) {
    var opts = { method: method, headers: { 'Accept': 'application/json' }, credentials: 'same-origin' };
    if (payload !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(payload);
    }
    return fetch(path, opts).then(function (resp) {
      if (resp.status === 204) return null;
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!resp.ok) {
          var msg = method + ' ' + path + ': ' + resp.status + ' ' + resp.statusText;
          if (data && (data.message || data.error)) {
            msg += ': ' + (data.error ? data.error + ': ' : '') + (data.message || '');
          } else if (text) {
            msg += ': ' + text.slice(0, 300);
          }
          var err = new Error(msg);
          err.status = resp.status;
          err.code = data && data.error;
          throw err;
        }
        if (data === null) throw new Error(method + ' ' + path + ': the answer is not JSON');
        return data;
      });
    }, function (e) {
      throw new Error('cannot reach the API (' + method + ' ' + path + '): ' + e.message);
    });
  }

  function showError(err) {
    var box = $('error');
    box.textContent = String(err && err.message ? err.message : err);
    box.hidden = false;
    body.setAttribute('data-state', 'error');
  }

  function clearError() {
    var box = $('error');
    box.textContent = '';
    box.hidden = true;
  }

  function notice(text) {
    var box = $('notice');
    box.textContent = text;
    box.hidden = !text;
  }

  // load runs a page's loader and marks the body for tests and scripts:
  // data-state is "ready" once drawn, "error" when the API said no.
  function load(fn) {
    body.setAttribute('data-state', 'loading');
    clearError();
    return Promise.resolve().then(fn).then(function () {
      body.setAttribute('data-state', 'ready');
    }, function (e) {
      document.querySelectorAll('.loading').forEach(function (n) {
        n.classList.remove('loading');
        n.textContent = 'Not available.';
      });
      showError(e);
    });
  }

  // ---- pages ------------------------------------------------------------

  function clusterPage() {
    return api('GET', '/api/cluster').then(function (c) {
      $('cluster-id').textContent = c.cluster_id ? '(' + c.cluster_id + ')' : '';
      var ctl = c.controller || {};
      var voters = (ctl.voters || []).map(function (v) { return { id: v.id, addr: v.addr, role: v.id === ctl.leader ? 'leader' : 'voter' }; });
      (ctl.non_voters || []).forEach(function (v) { voters.push({ id: v.id, addr: v.addr, role: 'non-voter' }); });
      fill('controllers',
        el('p', null, 'Leader: ', el('strong', { id: 'controller-leader' }, ctl.leader === undefined || ctl.leader === null ? 'none' : String(ctl.leader))),
        table('controllers', [
          { title: 'Node', key: 'id', cell: function (v) { return String(v.id); } },
          { title: 'Address', key: 'addr', cell: function (v) { return v.addr; } },
          { title: 'Role', key: 'role', cell: function (v) { return v.role; } }
        ], voters, 'No controller voters reported.'));
      fill('stores', table('stores', [
        { title: 'Store', key: 'id', cell: function (s) { return String(s.id); } },
        { title: 'Address', key: 'addr', cell: function (s) { return s.addr; } },
        { title: 'Live', key: 'live', cell: function (s) { return el('span', { 'class': s.live ? 'ok' : 'bad' }, yesNo(s.live)); } },
        { title: 'Draining', key: 'draining', cell: function (s) { return yesNo(s.draining); } },
        { title: 'Partitions', key: 'partitions', num: true, cell: function (s) { return String(s.partitions); } },
        { title: 'Leaders', key: 'leaders', num: true, cell: function (s) { return String(s.leaders); } },
        { title: 'Disk', key: 'disk_bytes', num: true, cell: function (s) { return fmtBytes(s.disk_bytes); } },
        { title: 'Cold', key: 'cold_bytes', num: true, cell: function (s) { return fmtBytes(s.cold_bytes); } }
      ], c.stores, 'No stores.'));
      fill('gateways', table('gateways', [
        { title: 'Gateway', key: 'id', cell: function (g) { return String(g.id); } },
        { title: 'Kind', key: 'kind', cell: function (g) { return g.kind; } },
        { title: 'Address', key: 'addr', cell: function (g) { return g.addr; } }
      ], c.gateways, 'No gateways.'));
      fill('leadership', table('leadership', [
        { title: 'Topic', key: 'topic', cell: function (p) { return link(topicHref(p.topic), p.topic); } },
        { title: 'Partition', key: 'partition', num: true, cell: function (p) { return String(p.partition); } },
        { title: 'Leader', key: 'leader', num: true, cell: function (p) { return String(p.leader); } },
        { title: 'Replicas', key: 'replicas', cell: function (p) { return ids(p.replicas); } },
        { title: 'ISR', key: 'isr', cell: function (p) { return ids(p.isr); } }
      ], c.leadership, 'No partitions.'));
    });
  }

  function topicsPage() {
    var box = $('show-internal');
    function draw(topics) {
      var rows = (topics || []).filter(function (t) { return box.checked || !t.internal; });
      rows.sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
      fill('topics', table('topics', [
        { title: 'Topic', key: 'name', cell: function (t) { return link(topicHref(t.name), t.name); } },
        { title: 'Partitions', key: 'partitions', num: true, cell: function (t) { return String(t.partitions); } },
        { title: 'Replication', key: 'replication_factor', num: true, cell: function (t) { return String(t.replication_factor); } },
        { title: 'Local', key: 'local_bytes', num: true, cell: function (t) { return fmtBytes(t.local_bytes); } },
        { title: 'Cold', key: 'cold_bytes', num: true, cell: function (t) { return fmtBytes(t.cold_bytes); } },
        { title: 'Tiering backlog', key: 'tier_backlog_bytes', num: true, cell: function (t) { return fmtBytes(t.tier_backlog_bytes); } },
        { title: 'Iceberg', key: 'iceberg', cell: function (t) { return yesNo(t.iceberg); } },
        { title: 'Internal', key: 'internal', cell: function (t) { return yesNo(t.internal); } }
      ], rows, 'No topics.'));
    }
    return api('GET', '/api/topics').then(function (d) {
      box.onchange = function () { draw(d.topics); };
      draw(d.topics);
    });
  }

  function topicPage() {
    var name = body.getAttribute('data-topic');
    var path = '/api/topics/' + encodeURIComponent(name);
    return api('GET', path).then(function (t) { drawTopic(t, path); });
  }

  function drawTopic(t, path) {
    var name = t.name;
    fill('partitions', table('partitions', [
      { title: 'Partition', key: 'partition', num: true, cell: function (p) { return String(p.partition); } },
      { title: 'Leader', key: 'leader', num: true, cell: function (p) { return String(p.leader); } },
      { title: 'Replicas', key: 'replicas', cell: function (p) { return ids(p.replicas); } },
      { title: 'ISR', key: 'isr', cell: function (p) { return ids(p.isr); } },
      { title: 'Log start', key: 'log_start', num: true, cell: function (p) { return String(p.log_start); } },
      { title: 'High watermark', key: 'high_watermark', num: true, cell: function (p) { return String(p.high_watermark); } },
      { title: 'Last stable', key: 'last_stable', num: true, cell: function (p) { return String(p.last_stable); } },
      { title: 'Local', key: 'local_bytes', num: true, cell: function (p) { return fmtBytes(p.local_bytes); } },
      { title: 'Cold', key: 'cold_bytes', num: true, cell: function (p) { return fmtBytes(p.cold_bytes); } },
      { title: 'Tiering backlog', key: 'tier_backlog_bytes', num: true, cell: function (p) { return fmtBytes(p.tier_backlog_bytes); } },
      { title: '', cell: function (p) {
        return link('/messages?topic=' + encodeURIComponent(name) + '&partition=' + p.partition + '&offset=' + p.log_start, 'browse');
      } }
    ], t.partitions, 'No partitions.'));

    var configs = (t.configs || []).slice().sort(function (a, b) { return a.name < b.name ? -1 : 1; });
    fill('configs', table('configs', [
      { title: 'Config', key: 'name', cell: function (c) { return el('span', { title: c.doc || null }, c.name); } },
      { title: 'Value', key: 'value', cell: function (c) { return configValue(c, path); } },
      { title: 'Default', key: 'is_default', cell: function (c) { return yesNo(c.is_default); } },
      { title: 'Dynamic', key: 'dynamic', cell: function (c) { return yesNo(c.dynamic); } }
    ], configs, 'No configs.'));
  }

  // configValue shows a config's value and, for a dynamic one, an inline
  // editor that PATCHes it.
  function configValue(c, path) {
    var shown = el('span', { 'class': 'config-value', 'data-config': c.name }, c.value === null || c.value === undefined ? '(none)' : c.value);
    if (!c.dynamic) return shown;
    var wrap = el('span', { 'class': 'config-edit' });
    var edit = el('button', { type: 'button', 'class': 'small', 'data-edit': c.name }, 'Edit');
    edit.addEventListener('click', function () {
      var input = el('input', { type: 'text', value: c.value === null || c.value === undefined ? '' : c.value, 'data-input': c.name, 'aria-label': c.name });
      var save = el('button', { type: 'submit', 'class': 'small', 'data-save': c.name }, 'Save');
      var cancel = el('button', { type: 'button', 'class': 'small' }, 'Cancel');
      var form = el('form', { 'class': 'inline' }, input, ' ', save, ' ', cancel);
      cancel.addEventListener('click', function () { wrap.textContent = ''; append(wrap, [shown, ' ', edit]); });
      form.addEventListener('submit', function (ev) {
        ev.preventDefault();
        var patch = {};
        patch[c.name] = input.value;
        save.disabled = true;
        load(function () {
          return api('PATCH', path + '/configs', { configs: patch }).then(function (t) {
            drawTopic(t, path);
            notice('Set ' + c.name + ' = ' + input.value + '.');
          });
        }).then(function () { save.disabled = false; });
      });
      wrap.textContent = '';
      append(wrap, form);
      input.focus();
    });
    append(wrap, [shown, ' ', edit]);
    return wrap;
  }

  // showV draws a key, value or header value as the API decoded it: the
  // decoded text for schema and UTF-8 encodings, hex otherwise.
  function showV(v) {
    if (!v || v.encoding === 'null') return el('span', { 'class': 'null' }, 'null');
    var tag = v.encoding + (v.schema_id !== undefined && v.schema_id !== null ? ' #' + v.schema_id : '');
    return el('span', { 'class': 'v v-' + v.encoding },
      el('span', { 'class': 'enc' }, tag), ' ',
      el('code', { 'class': 'text' }, v.text === undefined || v.text === null ? '' : v.text));
  }

  function messagesPage() {
    var form = $('browse-form');
    var q = new URLSearchParams(location.search);
    var from = $('f-from');
    function syncFrom() {
      var byTime = from.value === 'timestamp';
      $('l-offset').hidden = byTime;
      $('l-time').hidden = !byTime;
    }
    from.addEventListener('change', syncFrom);
    if (q.get('partition') !== null) $('f-partition').value = q.get('partition');
    if (q.get('offset') !== null) $('f-offset').value = q.get('offset');
    if (q.get('timestamp') !== null) { from.value = 'timestamp'; $('f-time').value = q.get('timestamp'); }
    if (q.get('limit') !== null) $('f-limit').value = q.get('limit');
    syncFrom();

    var next = $('next-page');
    var lastNext = null;

    function fetchPage(params) {
      var topic = $('f-topic').value;
      var url = '/api/topics/' + encodeURIComponent(topic) + '/messages?' + params.toString();
      var shown = new URLSearchParams(params);
      shown.set('topic', topic);
      history.replaceState(null, '', '/messages?' + shown.toString());
      return api('GET', url).then(function (d) {
        var msgs = d.messages || [];
        $('range').textContent = msgs.length === 0
          ? 'No messages from there; high watermark ' + d.high_watermark + '.'
          : 'Offsets ' + msgs[0].offset + '–' + msgs[msgs.length - 1].offset + ' of partition ' + d.partition + '; high watermark ' + d.high_watermark + '.';
        fill('messages', table('messages', [
          { title: 'Offset', key: 'offset', num: true, cell: function (m) { return String(m.offset); } },
          { title: 'Timestamp', key: 'timestamp', cell: function (m) { return el('span', { title: String(m.timestamp) }, fmtTime(m.timestamp)); } },
          { title: 'Key', key: 'key', cell: function (m) { return showV(m.key); } },
          { title: 'Value', key: 'value', cell: function (m) { return showV(m.value); } },
          { title: 'Headers', key: 'headers', cell: function (m) {
            return (m.headers || []).map(function (h) {
              return el('div', { 'class': 'header' }, el('span', { 'class': 'hkey' }, h.key), ': ', showV(h.value));
            });
          } }
        ], msgs, 'No messages.'));
        lastNext = d.next_offset;
        next.hidden = !(msgs.length > 0 && typeof d.next_offset === 'number' && d.next_offset < d.high_watermark);
      });
    }

    function params(offset) {
      var p = new URLSearchParams();
      p.set('partition', $('f-partition').value);
      if (offset !== undefined) {
        p.set('offset', String(offset));
      } else if (from.value === 'timestamp') {
        var raw = $('f-time').value.trim();
        var ms = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
        if (!isFinite(ms)) throw new Error('time: "' + raw + '" is neither an ISO-8601 time nor epoch milliseconds');
        p.set('timestamp', String(ms));
      } else {
        p.set('offset', $('f-offset').value);
      }
      p.set('limit', $('f-limit').value);
      return p;
    }

    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      load(function () { return fetchPage(params()); });
    });
    next.addEventListener('click', function () {
      if (lastNext === null) return;
      $('f-offset').value = String(lastNext);
      from.value = 'offset';
      syncFrom();
      load(function () { return fetchPage(params(lastNext)); });
    });

    return api('GET', '/api/topics').then(function (d) {
      var sel = $('f-topic');
      var want = q.get('topic');
      var names = (d.topics || []).map(function (t) { return t.name; }).sort();
      if (want && names.indexOf(want) < 0) names.unshift(want);
      names.forEach(function (n) { append(sel, el('option', { value: n, selected: n === want }, n)); });
      if (names.length === 0) {
        fill('messages', el('p', { 'class': 'empty' }, 'No topics yet.'));
        return;
      }
      if (want) return fetchPage(params());
      fill('messages', el('p', { 'class': 'empty' }, 'Choose a partition and where to start, then Load.'));
    });
  }

  function groupsPage() {
    return api('GET', '/api/groups').then(function (d) {
      var rows = (d.groups || []).slice().sort(function (a, b) { return a.group < b.group ? -1 : 1; });
      fill('groups', table('groups', [
        { title: 'Group', key: 'group', cell: function (g) { return link(groupHref(g.group), g.group); } },
        { title: 'Type', key: 'type', cell: function (g) { return g.type; } },
        { title: 'State', key: 'state', cell: function (g) { return g.state; } },
        { title: 'Members', key: 'members', num: true, cell: function (g) { return String(g.members); } },
        { title: 'Protocol', key: 'protocol', cell: function (g) { return g.protocol; } },
        { title: 'Total lag', key: 'total_lag', num: true, cell: function (g) { return String(g.total_lag); } }
      ], rows, 'No consumer groups.'));
      var deleted = new URLSearchParams(location.search).get('deleted');
      if (deleted) notice('Deleted group ' + deleted + '.');
    });
  }

  // confirm asks in the page's <dialog> and resolves to true on Confirm.
  // The close event is queued, so the previous prompt's close can arrive
  // after this one opened; it is ignored while the dialog is open.
  function confirmDialog(text) {
    var dlg = $('confirm');
    $('confirm-text').textContent = text;
    return new Promise(function (resolve) {
      dlg.addEventListener('close', function onClose() {
        if (dlg.open) return;
        dlg.removeEventListener('close', onClose);
        resolve(dlg.returnValue === 'ok');
      });
      dlg.returnValue = '';
      dlg.showModal();
    });
  }

  function groupPage() {
    var name = body.getAttribute('data-group');
    var path = '/api/groups/' + encodeURIComponent(name);
    var to = $('r-to');
    function syncTo() {
      var needs = to.value === 'offset' || to.value === 'timestamp';
      $('l-r-value').hidden = !needs;
      $('r-value-label').textContent = to.value === 'offset' ? 'Offset' : 'Time (ISO-8601 or epoch ms)';
    }
    to.addEventListener('change', syncTo);
    syncTo();

    $('reset-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var req = { topic: $('r-topic').value, to: to.value };
      var parts = $('r-partitions').value.trim();
      try {
        if (parts) {
          req.partitions = parts.split(',').map(function (s) {
            var n = Number(s.trim());
            if (!Number.isInteger(n) || n < 0) throw new Error('partitions: "' + s.trim() + '" is not a partition number');
            return n;
          });
        }
        var raw = $('r-value').value.trim();
        if (to.value === 'offset') {
          if (!/^\d+$/.test(raw)) throw new Error('offset: "' + raw + '" is not a non-negative integer');
          req.offset = Number(raw);
        } else if (to.value === 'timestamp') {
          var ms = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
          if (!isFinite(ms)) throw new Error('time: "' + raw + '" is neither an ISO-8601 time nor epoch milliseconds');
          req.timestamp = ms;
        }
      } catch (e) {
        showError(e);
        return;
      }
      var what = 'Reset the committed offsets of group "' + name + '" on topic "' + req.topic + '"' +
        (req.partitions ? ' partitions ' + req.partitions.join(', ') : ' (all partitions)') + ' to ' + to.value +
        (req.offset !== undefined ? ' ' + req.offset : '') + (req.timestamp !== undefined ? ' ' + fmtTime(req.timestamp) : '') + '?';
      confirmDialog(what).then(function (ok) {
        if (!ok) return;
        load(function () {
          return api('POST', path + '/reset', req).then(function () {
            notice('Reset group ' + name + ' on ' + req.topic + ' to ' + to.value + '.');
            return api('GET', path).then(drawGroup);
          });
        });
      });
    });

    $('delete').addEventListener('click', function () {
      confirmDialog('Delete group "' + name + '" and all its committed offsets? This cannot be undone.').then(function (ok) {
        if (!ok) return;
        load(function () {
          return api('DELETE', path).then(function () {
            location.assign('/groups?deleted=' + encodeURIComponent(name));
          });
        });
      });
    });

    return api('GET', path).then(drawGroup);
  }

  function drawGroup(g) {
    var members = g.members || [];
    var offsets = (g.offsets || []).slice().sort(function (a, b) {
      return a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition;
    });
    $('group-summary').textContent = 'Type ' + g.type + ', state ' + g.state + ', ' + members.length + ' member' + (members.length === 1 ? '' : 's') + '.';
    fill('members', table('members', [
      { title: 'Member', key: 'member_id', cell: function (m) { return m.member_id; } },
      { title: 'Client', key: 'client_id', cell: function (m) { return m.client_id; } },
      { title: 'Host', key: 'host', cell: function (m) { return m.host; } },
      { title: 'Assignments', key: 'assignments', cell: function (m) {
        return (m.assignments || []).map(function (a) { return el('div', null, a.topic + ': ' + ids(a.partitions)); });
      } }
    ], members, 'No members (the group is empty).'));
    var total = 0;
    offsets.forEach(function (o) { if (typeof o.lag === 'number' && o.lag > 0) total += o.lag; });
    $('total-lag').textContent = String(total);
    fill('offsets', table('offsets', [
      { title: 'Topic', key: 'topic', cell: function (o) { return link(topicHref(o.topic), o.topic); } },
      { title: 'Partition', key: 'partition', num: true, cell: function (o) { return String(o.partition); } },
      { title: 'Committed', key: 'committed', num: true, cell: function (o) { return String(o.committed); } },
      { title: 'End', key: 'end', num: true, cell: function (o) { return String(o.end); } },
      { title: 'Lag', key: 'lag', num: true, cell: function (o) { return String(o.lag); } }
    ], offsets, 'No committed offsets.'));
    var sel = $('r-topic');
    var keep = sel.value;
    sel.textContent = '';
    var topics = [];
    offsets.forEach(function (o) { if (topics.indexOf(o.topic) < 0) topics.push(o.topic); });
    members.forEach(function (m) { (m.assignments || []).forEach(function (a) { if (topics.indexOf(a.topic) < 0) topics.push(a.topic); }); });
    topics.forEach(function (t) { append(sel, el('option', { value: t, selected: t === keep }, t)); });
  }

  function tablesPage() {
    return api('GET', '/api/iceberg').then(function (d) {
      fill('tables', table('tables', [
        { title: 'Topic', key: 'topic', cell: function (t) { return link(topicHref(t.topic), t.topic); } },
        { title: 'Table', key: 'table', cell: function (t) { return t.table; } },
        { title: 'Last commit', key: 'last_commit_ms', cell: function (t) { return fmtAgo(t.last_commit_ms); } },
        { title: 'Lag (records)', key: 'lag_records', num: true, cell: function (t) { return String(t.lag_records); } },
        { title: 'Lag (time)', key: 'lag_ms', num: true, cell: function (t) { return typeof t.lag_ms === 'number' ? (t.lag_ms / 1000).toFixed(1) + ' s' : ''; } },
        { title: 'Files', key: 'files', num: true, cell: function (t) { return String(t.files); } },
        { title: 'Size', key: 'bytes', num: true, cell: function (t) { return fmtBytes(t.bytes); } },
        { title: 'Snapshot', key: 'snapshot_id', cell: function (t) { return t.snapshot_id === undefined || t.snapshot_id === null ? '' : String(t.snapshot_id); } }
      ], d.tables, 'No Iceberg topics on this cluster.'));
    });
  }

  // ---- throughput chart -------------------------------------------------

  var series = {
    bytes: [
      { key: 'produce_bytes_per_s', label: 'produce B/s', color: '#2b6cb0' },
      { key: 'fetch_bytes_per_s', label: 'fetch B/s', color: '#c05621' }
    ],
    records: [
      { key: 'produce_records_per_s', label: 'produce records/s', color: '#2f855a' }
    ]
  };

  function niceMax(v) {
    if (!(v > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  function fmtRate(v) {
    if (typeof v !== 'number') return '';
    if (v >= 1e9) return (v / 1e9).toFixed(1) + 'G';
    if (v >= 1e6) return (v / 1e6).toFixed(1) + 'M';
    if (v >= 1e3) return (v / 1e3).toFixed(1) + 'k';
    return v % 1 === 0 ? String(v) : v.toFixed(1);
  }

  function drawChart(canvas, samples, lines) {
    var ctx = canvas.getContext('2d');
    var w = canvas.width, h = canvas.height;
    var left = 60, right = 10, top = 24, bottom = 28;
    ctx.clearRect(0, 0, w, h);
    ctx.font = '12px sans-serif';
    var max = 0;
    samples.forEach(function (s) { lines.forEach(function (l) { if (s[l.key] > max) max = s[l.key]; }); });
    max = niceMax(max);
    var t0 = samples.length ? samples[0].t_ms : 0;
    var t1 = samples.length ? samples[samples.length - 1].t_ms : 1;
    if (t1 <= t0) t1 = t0 + 1;
    function x(t) { return left + (t - t0) / (t1 - t0) * (w - left - right); }
    function y(v) { return top + (1 - v / max) * (h - top - bottom); }
    ctx.strokeStyle = '#ddd';
    ctx.fillStyle = '#555';
    ctx.textAlign = 'right';
    for (var i = 0; i <= 4; i++) {
      var v = max * i / 4;
      ctx.beginPath(); ctx.moveTo(left, y(v)); ctx.lineTo(w - right, y(v)); ctx.stroke();
      ctx.fillText(fmtRate(v), left - 6, y(v) + 4);
    }
    ctx.textAlign = 'left';
    if (samples.length) {
      ctx.fillText(new Date(t0).toISOString().substr(11, 8), left, h - 8);
      ctx.textAlign = 'right';
      ctx.fillText(new Date(t1).toISOString().substr(11, 8) + ' UTC', w - right, h - 8);
    }
    var lx = left;
    lines.forEach(function (l) {
      ctx.strokeStyle = l.color;
      ctx.lineWidth = 2;
      ctx.beginPath();
      samples.forEach(function (s, j) {
        var px = x(s.t_ms), py = y(s[l.key] || 0);
        if (j === 0) ctx.moveTo(px, py); else ctx.lineTo(px, py);
      });
      ctx.stroke();
      ctx.fillStyle = l.color;
      ctx.fillRect(lx, 6, 10, 10);
      ctx.fillStyle = '#333';
      ctx.textAlign = 'left';
      ctx.fillText(l.label, lx + 14, 15);
      lx += 24 + ctx.measureText(l.label).width;
    });
    ctx.lineWidth = 1;
  }

  function throughputPage() {
    var period = 5000;
    var timer = null;
    function poll() {
      return api('GET', '/api/metrics/throughput').then(function (d) {
        var samples = (d.samples || []).slice().sort(function (a, b) { return a.t_ms - b.t_ms; });
        drawChart($('chart-bytes'), samples, series.bytes);
        drawChart($('chart-records'), samples, series.records);
        var last = samples[samples.length - 1];
        $('tp-latest').textContent = last
          ? 'Latest (' + fmtTime(last.t_ms) + '): produce ' + fmtRate(last.produce_bytes_per_s) + ' B/s, ' +
            fmtRate(last.produce_records_per_s) + ' records/s; fetch ' + fmtRate(last.fetch_bytes_per_s) + ' B/s. ' + samples.length + ' samples.'
          : 'No samples yet; the node samples its metrics every few seconds.';
        body.setAttribute('data-samples', String(samples.length));
      });
    }
    function again() {
      timer = setTimeout(function () {
        poll().then(function () { clearError(); }, showError).then(again);
      }, period);
    }
    document.addEventListener('visibilitychange', function () {
      if (document.hidden && timer !== null) { clearTimeout(timer); timer = null; } else if (!document.hidden && timer === null) again();
    });
    return poll().then(again, function (e) { again(); throw e; });
  }

  var pages = {
    cluster: clusterPage,
    topics: topicsPage,
    topic: topicPage,
    messages: messagesPage,
    groups: groupsPage,
    group: groupPage,
    tables: tablesPage,
    throughput: throughputPage,
    notfound: function () {}
  };

  document.querySelectorAll('button.refresh').forEach(function (b) {
    b.addEventListener('click', function () { location.reload(); });
  });
  var fn = pages[body.getAttribute('data-page')];
  if (fn) load(fn);
})();
