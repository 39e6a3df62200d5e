// Starts dynalite (pinned in package.json) for tests and the demo.
//
// dynalite 4.0.0 rethrows the error of a request whose client went away
// mid-body (`req.on('error', err => { throw err })` in its index.js), which
// ends the whole server. Tests kill dynafold with SIGKILL and inject
// connection resets on purpose, so that error is expected here: it is
// swallowed, and any other uncaught error still ends the process.
'use strict'

process.on('uncaughtException', (err) => {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) {
    return
  }
  console.error(err)
  process.exit(1)
})

require('../node_modules/dynalite/cli.js')
