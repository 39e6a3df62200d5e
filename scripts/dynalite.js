// Starts dynalite (pinned in package.json) for tests and the demo.
//
// dynalite 4.0.0 rethrows the error of a request whose client went away
// mid-body (`req.on('error', err => { throw err })` in its index.js), which
// ends the whole server. Tests kill dynafold with SIGKILL and inject
// connection resets on purpose, so that error is expected here: it is
// swallowed, and any other uncaught error still ends the process.
//
// dynalite 4.0.0 also lists a table's keys, when it deletes the table, by
// walking every key of every table (its prefixed wrapper passes no range
// to createKeyStream, then filters by prefix): even an empty table's
// DeleteTable took seconds of its single thread while the parallel tests
// held other tables. Its db module is loaded here with that walk bounded
// to the prefix, as its createValueStream already is; the keys it yields
// are the same. If the line is not found (another dynalite), it runs as
// shipped.
'use strict'

const fs = require('fs')
const path = require('path')
const Module = require('module')

process.on('uncaughtException', (err) => {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) {
    return
  }
  console.error(err)
  process.exit(1)
})

const dbIndex = require.resolve('../node_modules/dynalite/db/index.js')
const unbounded = 'const mainStream = mainDb.createKeyStream(options)'
const bounded = "const mainStream = mainDb.createKeyStream(Object.assign({ gte: prefix, lt: prefix + '\\xFF' }, options))"
const source = fs.readFileSync(dbIndex, 'utf8')
if (source.includes(unbounded)) {
  const m = new Module(dbIndex, module)
  m.filename = dbIndex
  m.paths = Module._nodeModulePaths(path.dirname(dbIndex))
  m._compile(source.replace(unbounded, bounded), dbIndex)
  m.loaded = true
  require.cache[dbIndex] = m
} else {
  console.error('dynalite.js: db/index.js is not the one patched here; deleting a table walks every key')
}

require('../node_modules/dynalite/cli.js')
