// The baseline of the protected read: an Express hello-world route, nothing else.
import express from 'express';

const app = express();
app.disable('x-powered-by');
app.get('/hello', (_req, res) => {
  res.json({ hello: 'world' });
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send!({ ready: true }));
server.keepAliveTimeout = 5000;
