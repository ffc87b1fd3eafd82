// The reference page: Swagger UI from the swagger-ui-dist package, served by the api itself (no
// CDN, so it works offline and behind a strict CSP). The start-up script is a file of its own,
// not an inline <script>, so that `script-src 'self'` suffices.

export const ASSET_PREFIX = '/docs/assets';

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>walgate API reference</title>
  <link rel="icon" type="image/png" href="${ASSET_PREFIX}/favicon.png">
  <link rel="stylesheet" href="${ASSET_PREFIX}/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${ASSET_PREFIX}/swagger-ui-bundle.js"></script>
  <script src="${ASSET_PREFIX}/start.js"></script>
</body>
</html>
`;

// validatorUrl: null — Swagger UI would otherwise send the document to a public validator.
export const START_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  validatorUrl: null,
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: -1,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

/** Only what the page loads; nothing from another origin, no inline script. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
