// Every view of the console, registered in the order their routes are tried and their links are
// shown. A new view is one module under views/ that calls registerRoute (and registerNav for a
// link in the header), and one import line here.
import './subscriptions.js';
import './form.js';
import './detail.js';
import './users.js';
import './organizations.js';
import './destinations.js';
