import { setFrame, start } from './routing.js';
import { renderFrame, signInView } from './views/session.js';
import './views/index.js';

// The delivery console: one project (the management token's) and its environments, as hand-written
// ES modules without a build step — shared helpers (api, dom, format, shell, routing) and one module
// per view under views/, registered in views/index.js.

setFrame({ signInView, renderFrame });
start();
