/** The one source of "now" for decisions that tests need to move (expiry, lockout, schedules). */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

export function addSeconds(d: Date, seconds: number): Date {
  return new Date(d.getTime() + seconds * 1000);
}
