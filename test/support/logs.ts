import { Writable } from 'node:stream';

/** A pino destination that keeps every line, so a test can search what was logged. */
export class CapturedLogs extends Writable {
  readonly lines: string[] = [];

  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }

  get text(): string {
    return this.lines.join('\n');
  }
}
